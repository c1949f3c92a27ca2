"""``expkit profile`` on the console: the buckets, the top ops, the verdict; a crashed script's traceback."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from expkit.render.console import fitted_table, out_console

if TYPE_CHECKING:
    from expkit.perf.buckets import ProfileReport
    from expkit.perf.profiler import ScriptProfile

__all__ = ["render_profile_report", "render_script_profile"]


def render_profile_report(rep: ProfileReport, *, top: int) -> None:
    """The window, the buckets by share, device idle time, the ``top`` ops by self time, notes, verdict."""
    con = out_console()
    steps = f"{rep.steps} profiler steps" if rep.steps else "whole run (no ProfilerStep)"
    dist = f", rank {rep.rank} of {rep.world_size}" if rep.rank is not None else ""
    con.print(f"[bold]{rep.source}[/]: {rep.timeline} timeline, {steps}, window {rep.window_s * 1e3:.1f} ms{dist}")
    table = fitted_table("bucket", "time ms", "share")
    for b in sorted(rep.buckets, key=lambda b: -b.share):
        table.add_row(b.label, f"{b.seconds * 1e3:.2f}", f"{b.share:.1%}")
    con.print(table)
    if rep.timeline == "device":
        con.print(f"device idle: host wait {rep.idle_host_wait_s * 1e3:.2f} ms, gaps {rep.idle_gaps_s * 1e3:.2f} ms")
    ops = fitted_table("op / kernel (self time)", "bucket", "calls", "ms")
    for o in rep.top_ops[:top]:
        ops.add_row(o.name[:80], o.bucket, str(o.calls), f"{o.self_s * 1e3:.2f}")
    con.print(ops)
    for note in rep.notes:
        con.print(f"[dim]note: {note}[/]")
    if rep.profiling_overhead_ratio is not None:
        con.print(f"profiling overhead: {rep.profiling_overhead_ratio:.2f}x the plain step time")
    con.print(f"[bold]verdict:[/] {rep.verdict}")


def render_script_profile(res: ScriptProfile, *, top: int) -> None:
    """The profile of the script (or why there is none) and, when it crashed, its traceback read by
    ``expkit why`` on stderr."""
    if res.report is not None:
        render_profile_report(res.report, top=top)
        print(f"trace: {res.trace_path}")
    else:
        print(
            f"no torch op was recorded while {' '.join(res.argv)} ran ({res.elapsed_s:.1f} s); trace: {res.trace_path}"
        )
    if res.returncode == 0 or not res.traceback:
        return
    diag = res.diagnosis()
    if diag is not None and diag.traceback.exceptions:
        from expkit.diagnose import format_report

        print(format_report(diag.traceback, diag.explanation), file=sys.stderr)
    else:
        print(res.traceback, file=sys.stderr)
