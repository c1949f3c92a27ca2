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
from typing import Any

from expkit.errors import UsageError
from expkit.runs.fingerprint import fingerprint_input
from expkit.runs.store import find_run_dir, read_record, resolve_store

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
    from expkit.runs.execute import ExecRequest, execute

    root = resolve_store(store)
    run_dir = find_run_dir(root, ref)
    rec = read_record(run_dir)
    code = rec.code
    command = list(rec.command)
    if len(command) >= 2 and command[1] in ("-c", "-m") and rec.kind == "api":
        raise UsageError(
            f"run {rec.id} was started with `python {command[1]}`; its command cannot be re-run",
            hint="record it with `expkit runs exec -- python script.py`",
        )
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
    worktree = Path(tempfile.mkdtemp(prefix="expkit-repro-"))
    added = _git(["worktree", "add", "--detach", str(worktree), code.commit], top)
    if added.returncode:
        raise UsageError(f"git worktree add failed: {added.stderr.strip()}")
    try:
        patch_applied = True
        if (run_dir / "code.patch").exists():
            applied = _git(["apply", "--whitespace=nowarn", str(run_dir / "code.patch")], worktree)
            patch_applied = applied.returncode == 0
            if not patch_applied:
                raise UsageError(f"the recorded patch does not apply: {applied.stderr.strip()[:300]}")
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
        # paths inside the original tree point into the worktree instead
        mapped = [str(worktree / Path(a).relative_to(top)) if a.startswith(str(top) + os.sep) else a for a in command]
        cwd = worktree / (code.workdir or "")
        seed = rec.seed.seed if rec.seed else None
        request = ExecRequest(
            tuple(mapped),
            store=root,
            name=f"repro-{rec.id}",
            seed=seed,
            group=rec.group,
            deterministic=bool(rec.seed and rec.seed.deterministic),
            cwd=cwd,
            data=tuple(d.path or d.source for d in rec.data),
            extra_record={"repro_of": rec.id},
        )
        res = execute(request, on_output=on_output)
    finally:
        if not keep_worktree:
            _git(["worktree", "remove", "--force", str(worktree)], top)
            shutil.rmtree(worktree, ignore_errors=True)
    old = {k: v for k, v in rec.final_metrics.items() if k not in ("time",)}
    new = {k: v for k, v in res.final_metrics.items() if k not in ("time",)}
    metrics = {k: (old.get(k), new.get(k)) for k in sorted(set(old) | set(new))}
    floor = read_noise_floor(root, rec.group) if rec.group else None
    if res.status != "finished":
        verdict, note = "different", f"the reproduction ended {res.status} (exit code {res.exit_code})"
    elif old == new and old:
        verdict, note = "exact", "every final metric is bitwise equal"
    elif floor and all(
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and k in floor and abs(a - b) <= floor[k]
        for k, (a, b) in metrics.items()
        if k != "step"
    ):
        verdict, note = "within noise floor", f"every change is under the seed-to-seed std of group {rec.group}"
    else:
        verdict = "different"
        note = (
            "no noise floor recorded for this run's group (run `expkit runs determinism`)"
            if not floor
            else "some metric moved more than the noise floor"
        )
    if mismatches:
        note += f"; {len(mismatches)} data input(s) changed since the run"
    return ReproReport(
        original=rec.id,
        reproduction=res.run_id,
        verdict=verdict,
        metrics=metrics,
        noise_floor=floor,
        data_mismatches=tuple(mismatches),
        data_compared=tuple(compared),
        patch_applied=patch_applied,
        patch_truncated=bool(code.patch_truncated),
        worktree=str(worktree) if keep_worktree else None,
        note=note,
    )
