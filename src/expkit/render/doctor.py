"""``expkit doctor``'s report: each finding with the user's line, the evidence and the fix."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from expkit.render.console import out_console

if TYPE_CHECKING:
    from expkit.doctor.checks import CheckInfo
    from expkit.doctor.findings import Finding
    from expkit.doctor.runner import DoctorResult

__all__ = ["doctor_lines", "render_checks", "render_doctor"]


def _path(file: str) -> str:
    return os.path.relpath(file) if os.path.isabs(file) and file.startswith(os.getcwd()) else file


def _where(f: Finding) -> str:
    if f.file is None:
        return "(no frame of yours on the stack)"
    seen = ""
    if f.seen_file is not None:
        seen = (
            f" (seen at {_path(f.seen_file)}:{f.seen_line})"
            if f.seen_file != f.file
            else f" (seen at line {f.seen_line})"
        )
    return f"{_path(f.file)}:{f.line}{seen}"


def _evidence(f: Finding) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in f.evidence.items())


def doctor_lines(result: DoctorResult) -> list[str]:
    """The report as plain lines (rich markup only in the headline)."""
    head = (
        f"expkit doctor: watched {result.steps_watched} of {result.watch_steps} optimizer step(s); "
        f"{len(result.findings)} finding(s) ({result.bugs} bug(s)); the program exited with {result.exit_code}"
        + (" after doctor stopped it (--steps)" if result.stopped else "")
    )
    lines = [head]
    if result.timed_out:
        lines.append(
            f"  no optimizer step in {result.max_wait_s:g} s: doctor stopped the program "
            "(a program that never steps, or a slow start: raise --max-wait)"
        )
    elif result.program_failed and result.steps_watched == 0:
        lines.append(f"  the program failed (exit {result.exit_code}) before its first optimizer step")
    elif result.program_failed:
        lines.append(f"  the program failed (exit {result.exit_code}) after {result.steps_watched} watched step(s)")
    if not result.armed:
        lines.append("  the program never imported torch: nothing was watched")
    elif result.steps_watched == 0:
        lines.append("  no optimizer step ran while watched: the checks that need a step saw nothing")
    for f in result.findings:
        lines.append("")
        lines.append(f"{f.kind.upper()} [{f.check}] at {_where(f)} (step {f.step})")
        lines.append(f"  {f.message}")
        if f.evidence:
            lines.append(f"  evidence: {_evidence(f)}")
        lines.append(f"  fix: {f.fix}")
    for err in result.check_errors:
        lines.append(f"check error (a bug in expkit, the other checks ran): {err}")
    return lines


def render_doctor(result: DoctorResult) -> None:
    """Print :func:`doctor_lines` on stdout."""
    console = out_console()
    for line in doctor_lines(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def render_checks(checks: tuple[CheckInfo, ...]) -> None:
    """``expkit doctor --list-checks``: each check's name and what it finds, one paragraph each."""
    console = out_console()
    for c in checks:
        console.print(f"{c.name}\n  {c.finds}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"{len(checks)} checks; docs/doctor.md lists the bug classes each one finds", markup=False)
