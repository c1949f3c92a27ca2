"""The parent side of ``expkit doctor``: run the user's command unchanged with the bootstrap on its
PYTHONPATH, then read what the probe wrote and return a :class:`DoctorResult`."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import expkit
from expkit.doctor.child import DEFAULT_WATCH_STEPS, ENV_OUT, ENV_ROOT, ENV_STEPS, ENV_STOP
from expkit.doctor.findings import Finding
from expkit.doctor.record import run_dir_from_environment, write_run_record
from expkit.errors import UsageError

__all__ = ["BOOT_DIR", "DEFAULT_WATCH_STEPS", "DoctorRequest", "DoctorResult", "read_events", "run_doctor"]

BOOT_DIR = Path(__file__).resolve().parent / "boot"


@dataclass(frozen=True)
class DoctorRequest:
    """What to run and how long to watch.

    Attributes:
        command: the argv, as after ``--`` (``("python", "train.py", "--lr", "3e-4")``).
        watch_steps: optimizer steps to watch (the first optimizer that steps counts).
        stop_after_watch: end the program once the watched steps are over (``--steps``), else let it run on.
        cwd: the command's working directory (default: this one).
        env: variables added to the command's environment.
        stdout_to_stderr: send the command's stdout to our stderr (``--json`` keeps stdout for the envelope).
    """

    command: tuple[str, ...]
    watch_steps: int = DEFAULT_WATCH_STEPS
    stop_after_watch: bool = False
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    stdout_to_stderr: bool = False


@dataclass(frozen=True)
class DoctorResult:
    """What doctor saw: the findings, how many steps it watched, and the program's own exit code.

    ``steps_watched`` is the largest number of steps any process's leading optimizer took while watched;
    0 with ``armed`` False means the program never imported torch, 0 with ``armed`` True that no
    optimizer stepped. ``stopped`` is True when ``--steps`` ended the program after the watch.
    """

    command: tuple[str, ...]
    exit_code: int
    watch_steps: int
    steps_watched: int
    armed: bool
    stopped: bool
    elapsed_s: float
    findings: tuple[Finding, ...]
    check_errors: tuple[str, ...] = ()

    @property
    def bugs(self) -> int:
        return sum(f.kind == "bug" for f in self.findings)


def read_events(path: Path) -> list[dict[str, Any]]:
    """The probe's events from a JSONL file (a line cut by a killed process is skipped)."""
    events: list[dict[str, Any]] = []
    if not path.exists():
        return events
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "event" in obj:
            events.append(obj)
    return events


def _child_env(request: DoctorRequest, out: Path) -> dict[str, str]:
    env = {**os.environ, **request.env}
    old = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(BOOT_DIR) + (os.pathsep + old if old else "")
    env[ENV_OUT] = str(out)
    env[ENV_STEPS] = str(request.watch_steps)
    env[ENV_STOP] = "1" if request.stop_after_watch else "0"
    env[ENV_ROOT] = str(Path(expkit.__file__).resolve().parent.parent)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def summarize_events(
    request: DoctorRequest, events: list[dict[str, Any]], exit_code: int, elapsed_s: float
) -> DoctorResult:
    """Fold the probe's events (from every process of the command) into one result; a finding seen by
    several ranks at the same line is reported once."""
    findings: dict[tuple[Any, ...], Finding] = {}
    steps = 0
    stopped = False
    for ev in events:
        if ev["event"] == "finding":
            f = Finding.from_json(ev)
            findings.setdefault((f.check, f.file, f.line), f)
        elif ev["event"] in ("step", "watch_done"):
            steps = max(steps, int(ev.get("step", ev.get("steps", 0))))
            stopped = stopped or (
                ev["event"] == "watch_done" and request.stop_after_watch and steps >= request.watch_steps
            )
    errors = tuple(sorted({f"{e['check']}: {e['error']}" for e in events if e["event"] == "check_error"}))
    return DoctorResult(
        command=request.command,
        exit_code=exit_code,
        watch_steps=request.watch_steps,
        steps_watched=steps,
        armed=any(e["event"] == "armed" for e in events),
        stopped=stopped,
        elapsed_s=elapsed_s,
        findings=tuple(sorted(findings.values(), key=lambda f: (f.step, f.kind != "bug", f.check))),
        check_errors=errors,
    )


def run_doctor(request: DoctorRequest) -> DoctorResult:
    """Run ``request.command`` with the probe armed and report what the checks found.

    Raises:
        UsageError: no command, ``watch_steps`` < 1, or a command that cannot start.

    Example:
        >>> run_doctor(DoctorRequest(command=("python", "train.py"))).findings[0].check  # doctest: +SKIP
        'missing_zero_grad'
    """
    if not request.command:
        raise UsageError("no command given", hint="write it after --, e.g. expkit doctor -- python train.py")
    if request.watch_steps < 1:
        raise UsageError(f"watch_steps {request.watch_steps} is not a positive number of steps", hint="e.g. 2")
    with tempfile.TemporaryDirectory(prefix="expkit-doctor-") as tmp:
        out = Path(tmp) / "events.jsonl"
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                list(request.command),
                cwd=request.cwd,
                env=_child_env(request, out),
                stdout=2 if request.stdout_to_stderr else None,
            )
        except OSError as exc:
            raise UsageError(
                f"could not start {request.command[0]!r}: {exc.strerror}", hint="check the command after --"
            ) from None
        code = proc.wait()
        result = summarize_events(request, read_events(out), code, time.perf_counter() - t0)
    run_dir = run_dir_from_environment({**os.environ, **request.env})
    if run_dir is not None and result.armed:  # under `runs exec`: every rank's findings, merged
        write_run_record(
            run_dir,
            findings=[f.to_json() for f in result.findings],
            steps_watched=result.steps_watched,
            source="expkit doctor",
        )
    return result
