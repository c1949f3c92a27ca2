"""``expkit runs repro ID``: rebuild the recorded code (commit + patch in a temporary git worktree),
check the data fingerprints, re-run the recorded command with the recorded seed, and compare.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expkit.errors import UsageError
from expkit.runs.fingerprint import fingerprint_input
from expkit.runs.store import find_run_dir, read_record, resolve_store

if TYPE_CHECKING:
    from expkit.runs.codestate import CodeRecord
    from expkit.runs.execute import ExecResult
    from expkit.runs.runrecord import RunRecord

__all__ = ["ReproReport", "reproduce"]


@dataclass(frozen=True)
class ReproReport:
    """``verdict``: ``exact`` (bitwise equal final metrics), ``within noise floor`` (every change under
    the group's seed-to-seed std), or ``different``. ``data_mismatches`` names inputs that changed;
    ``data_compared`` says for each input which kind of fingerprint was compared (``full``: every byte;
    ``sampled+mtime``: sampled blocks, size and mtime; ``sampled``: sampled blocks and size)."""

    original: str
    reproduction: str
    verdict: str
    metrics: dict[str, tuple[Any, Any]]
    noise_floor: dict[str, float] | None
    data_mismatches: tuple[str, ...]
    data_compared: tuple[str, ...]
    patch_applied: bool
    patch_truncated: bool
    worktree: str | None
    note: str


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _rebuildable_code(rec: RunRecord) -> CodeRecord:
    """The run's code record, when its commit can be checked out here and its command re-run.

    Raises:
        UsageError: started as ``python -c``/``-m``, no recorded commit, or the commit is not here.
    """
    command = list(rec.command)
    if len(command) >= 2 and command[1] in ("-c", "-m") and rec.kind == "api":
        raise UsageError(
            f"run {rec.id} was started with `python {command[1]}`; its command cannot be re-run",
            hint="record a script file as a command run (runs exec) to be able to reproduce it",
        )
    code = rec.code
    if code is None or not code.commit:
        raise UsageError(
            f"run {rec.id} has no recorded commit ({code.reason if code else 'no code record'})",
            hint="runs started outside a git work tree cannot be rebuilt",
        )
    top = Path(code.toplevel or ".")
    if not (top / ".git").exists() or _git(["cat-file", "-e", f"{code.commit}^{{commit}}"], top).returncode:
        raise UsageError(
            f"commit {code.commit[:12]} is not in {top}", hint="run repro in a clone that has the commit (git fetch)"
        )
    return code


@dataclass(frozen=True)
class _DataCheck:
    compared: tuple[str, ...]
    mismatches: tuple[str, ...]


def _check_data(rec: RunRecord) -> _DataCheck:
    """Each hashed input fingerprinted again with the scheme recorded; what changed since the run."""
    mismatches, compared = [], []
    for d in rec.data:
        if d.kind == "hf" or not d.hash:
            continue
        now = fingerprint_input(d.path or d.source, scheme=d.hash_scheme or "sampled")
        compared.append(f"{d.source}: {d.hash_scheme or 'sampled'}")
        if now.hash != d.hash:
            mismatches.append(
                f"{d.source}: {d.hash[:12]} then, {(now.hash or now.reason or '')[:12]} now ({d.hash_scheme} hash)"
            )
    return _DataCheck(tuple(compared), tuple(mismatches))


def _rerun_in(worktree: Path, rec: RunRecord, root: Path, on_output: Callable[[str, bytes], None] | None) -> ExecResult:
    """Apply the recorded patch in ``worktree`` and run the recorded command there with the recorded seed.

    Raises:
        UsageError: the patch does not apply.
    """
    from expkit.runs.execute import ExecRequest, execute

    assert rec.code is not None
    run_dir = root / rec.id
    if (run_dir / "code.patch").exists():
        applied = _git(["apply", "--whitespace=nowarn", str(run_dir / "code.patch")], worktree)
        if applied.returncode != 0:
            raise UsageError(f"the recorded patch does not apply: {applied.stderr.strip()[:300]}")
    top = Path(rec.code.toplevel or ".")
    # paths inside the original tree point into the worktree instead
    mapped = [str(worktree / Path(a).relative_to(top)) if a.startswith(str(top) + os.sep) else a for a in rec.command]
    request = ExecRequest(
        tuple(mapped),
        store=root,
        name=f"repro-{rec.id}",
        seed=rec.seed.seed if rec.seed else None,
        group=rec.group,
        deterministic=bool(rec.seed and rec.seed.deterministic),
        cwd=worktree / (rec.code.workdir or ""),
        data=tuple(d.path or d.source for d in rec.data),
        extra_record={"repro_of": rec.id},
    )
    return execute(request, on_output=on_output)


def _verdict(rec: RunRecord, res: ExecResult, floor: dict[str, float] | None) -> tuple[str, str]:
    """``exact``, ``within noise floor`` or ``different``, and why."""
    old = {k: v for k, v in rec.final_metrics.items() if k not in ("time",)}
    new = {k: v for k, v in res.final_metrics.items() if k not in ("time",)}
    metrics = {k: (old.get(k), new.get(k)) for k in sorted(set(old) | set(new))}
    if res.status != "finished":
        return "different", f"the reproduction ended {res.status} (exit code {res.exit_code})"
    if old == new and old:
        return "exact", "every final metric is bitwise equal"
    if floor and all(
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and k in floor and abs(a - b) <= floor[k]
        for k, (a, b) in metrics.items()
        if k != "step"
    ):
        return "within noise floor", f"every change is under the seed-to-seed std of group {rec.group}"
    if not floor:
        return "different", "no noise floor recorded for this run's group (measure one with the determinism probe)"
    return "different", "some metric moved more than the noise floor"


def reproduce(
    ref: str,
    *,
    store: str | os.PathLike[str] | None = None,
    keep_worktree: bool = False,
    on_output: Callable[[str, bytes], None] | None = None,
) -> ReproReport:
    """Re-run run ``ref`` from its records and judge the result.

    Raises:
        UsageError: the run has no commit, its repository is not here, or its command cannot be re-run.
    """
    from expkit.runs.determinism import read_noise_floor

    root = resolve_store(store)
    rec = read_record(find_run_dir(root, ref))
    code = _rebuildable_code(rec)
    top = Path(code.toplevel or ".")
    worktree = Path(tempfile.mkdtemp(prefix="expkit-repro-"))
    added = _git(["worktree", "add", "--detach", str(worktree), code.commit or ""], top)
    if added.returncode:
        raise UsageError(f"git worktree add failed: {added.stderr.strip()}")
    try:
        data = _check_data(rec)
        res = _rerun_in(worktree, rec, root, on_output)
    finally:
        if not keep_worktree:
            _git(["worktree", "remove", "--force", str(worktree)], top)
            shutil.rmtree(worktree, ignore_errors=True)
    old = {k: v for k, v in rec.final_metrics.items() if k not in ("time",)}
    new = {k: v for k, v in res.final_metrics.items() if k not in ("time",)}
    metrics = {k: (old.get(k), new.get(k)) for k in sorted(set(old) | set(new))}
    floor = read_noise_floor(root, rec.group) if rec.group else None
    verdict, note = _verdict(rec, res, floor)
    if data.mismatches:
        note += f"; {len(data.mismatches)} data input(s) changed since the run"
    return ReproReport(
        original=rec.id,
        reproduction=res.run_id,
        verdict=verdict,
        metrics=metrics,
        noise_floor=floor,
        data_mismatches=data.mismatches,
        data_compared=data.compared,
        patch_applied=True,
        patch_truncated=bool(code.patch_truncated),
        worktree=str(worktree) if keep_worktree else None,
        note=note,
    )
