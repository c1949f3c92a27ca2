"""Run labs one after another and write the report after each, so a crash keeps what was measured."""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from expkit import __version__
from expkit.errors import MissingDependency
from expkit.labs.base import Lab, LabContext, LabResult
from expkit.runs.machine import CodeRecord, MachineInfo, describe_code_version, describe_machine

__all__ = ["DEVICES", "LabReport", "check_lab_device", "run_labs"]

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class LabReport:
    """Everything the HTML and JSON report show."""

    expkit_version: str
    code: CodeRecord
    machine: MachineInfo
    budget: str
    started_at: str
    elapsed_s: float
    results: tuple[LabResult, ...]
    device: str = "cpu"

    @property
    def failed_ids(self) -> tuple[str, ...]:
        """The labs that raised (their traceback is in the report); the others still ran."""
        return tuple(r.id for r in self.results if r.status == "failed")


def check_lab_device(device: str) -> str:
    """``device`` if the labs can run on it here, else a UsageError (exit 2) saying what is missing.

    Raises:
        UsageError: ``device`` is not one of DEVICES, or it is ``cuda`` and torch sees no CUDA GPU.
    """
    from expkit.errors import UsageError

    if device not in DEVICES:
        raise UsageError(f"device {device!r} is not one of {', '.join(DEVICES)}")
    if device == "cuda":
        try:
            import torch
        except ImportError as exc:
            raise UsageError(
                "device cuda needs torch with CUDA; torch is not installed",
                hint="install expkit[torch] with a CUDA build, or run the labs on the CPU",
            ) from exc
        if not torch.cuda.is_available():
            raise UsageError(
                f"device cuda: torch {torch.__version__} sees no CUDA GPU on this machine "
                f"(torch.version.cuda = {torch.version.cuda})",
                hint="run on a machine with an NVIDIA GPU and a CUDA build of torch, or run the labs on the CPU",
            )
    return device


def _missing_extra(exc: ImportError | MissingDependency) -> str | None:
    """The pip extra a lab lacks when ``exc`` says an optional package is not installed (the light install has
    no torch); None for any other ImportError (our bug: it stays a failure with its traceback)."""
    from expkit.errors import EXTRA_OF_PACKAGE

    if isinstance(exc, MissingDependency):  # "needs torch ...: pip install 'expkit[torch]'"
        named = re.search(r"expkit\[([\w,-]+)\]", str(exc))
        return named.group(1) if named else "all"
    top = (exc.name or "").split(".")[0]
    return EXTRA_OF_PACKAGE.get(top)


def run_lab(lab: Lab, *, out_dir: Path, quick: bool, seed: int = 0, device: str = "cpu") -> LabResult:
    """Run one lab; an exception becomes a ``failed`` result holding the traceback, a missing optional extra a
    ``needs`` result naming it (an ImportError of any other package is a failure, not a crash of the run)."""
    ctx = LabContext(quick=quick, out_dir=out_dir / "figures" / lab.id, seed=seed, device=device)
    budget: Literal["quick", "full"] = "quick" if quick else "full"
    t0 = time.perf_counter()
    try:
        out = lab.run(ctx)
    except Exception as exc:  # noqa: BLE001 - a failed lab is reported, the others still run
        needed = _missing_extra(exc) if isinstance(exc, ImportError | MissingDependency) else None
        if needed is not None:
            return _result(lab, budget, t0, "needs", explanation=f"not run: needs expkit[{needed}] ({exc})")
        return _result(lab, budget, t0, "failed", error=traceback.format_exc())
    figures = tuple(str(Path(f).resolve().relative_to(out_dir.resolve())) for f in out.figures)
    return _result(lab, budget, t0, "ok", measurements=out.measurements, explanation=out.explanation, figures=figures)


def _result(
    lab: Lab, budget: Literal["quick", "full"], t0: float, status: Literal["ok", "failed", "needs"], **fields: Any
) -> LabResult:
    """The lab's result with its identity, budget and time since ``t0`` filled in."""
    return LabResult(
        id=lab.id,
        title=lab.title,
        claims=lab.claims,
        status=status,
        budget=budget,
        elapsed_s=time.perf_counter() - t0,
        seed_figures=lab.seed_figures,
        rule_history=lab.rule_history,
        **fields,
    )


def run_labs(
    labs: Sequence[Lab],
    *,
    out_dir: Path,
    quick: bool,
    seed: int = 0,
    device: str = "cpu",
    on_start: Callable[[int, Lab], None] | None = None,
    on_done: Callable[[int, LabResult], None] | None = None,
) -> LabReport:
    """Run ``labs`` in order on ``device`` (checked first with :func:`check_lab_device`).

    Writes ``out_dir/results.json`` and ``index.html`` after each lab.

    Returns:
        The complete LabReport (also on disk).
    """
    from expkit.render.report import write_report

    check_lab_device(device)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    report = LabReport(
        expkit_version=__version__,
        code=describe_code_version(Path(__file__).parent),
        machine=describe_machine(),
        budget="quick" if quick else "full",
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        elapsed_s=0.0,
        results=(),
        device=device,
    )
    for i, lab in enumerate(labs):
        if on_start:
            on_start(i, lab)
        result = run_lab(lab, out_dir=out_dir, quick=quick, seed=seed, device=device)
        report = replace(report, results=(*report.results, result), elapsed_s=time.perf_counter() - t0)
        write_report(report, out_dir)
        if on_done:
            on_done(i, result)
    if not labs:
        write_report(report, out_dir)
    return report
