"""``expkit profile``: run a script under torch.profiler (or read a trace) and sort its time into buckets."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit_json


def _print_report(rep, *, top: int) -> None:  # noqa: ANN001 - a ProfileReport
    from rich.table import Table

    from expkit.render.console import out_console

    con = out_console()
    steps = f"{rep.steps} profiler steps" if rep.steps else "whole run (no ProfilerStep)"
    dist = f", rank {rep.rank} of {rep.world_size}" if rep.rank is not None else ""
    con.print(f"[bold]{rep.source}[/]: {rep.timeline} timeline, {steps}, window {rep.window_s * 1e3:.1f} ms{dist}")
    table = Table("bucket", "time ms", "share")
    for b in sorted(rep.buckets, key=lambda b: -b.share):
        table.add_row(b.label, f"{b.seconds * 1e3:.2f}", f"{b.share:.1%}")
    con.print(table)
    if rep.timeline == "device":
        con.print(f"device idle: host wait {rep.idle_host_wait_s * 1e3:.2f} ms, gaps {rep.idle_gaps_s * 1e3:.2f} ms")
    ops = Table("op / kernel (self time)", "bucket", "calls", "ms")
    for o in rep.top_ops[:top]:
        ops.add_row(o.name[:80], o.bucket, str(o.calls), f"{o.self_s * 1e3:.2f}")
    con.print(ops)
    for note in rep.notes:
        con.print(f"[dim]note: {note}[/]")
    if rep.profiling_overhead_ratio is not None:
        con.print(f"profiling overhead: {rep.profiling_overhead_ratio:.2f}x the plain step time")
    con.print(f"[bold]verdict:[/] {rep.verdict}")


def profile(
    ctx: typer.Context,
    args: list[str] = typer.Argument(
        None,
        metavar="TRACE.json | -- python SCRIPT [ARGS]...",
        help="A Chrome trace to read, or the command to run after '--'.",
    ),
    out: Path = typer.Option(Path("profile_trace.json"), "--out", help="Where the script's trace is written."),
    top: int = typer.Option(8, "--top", help="Ops to list by self time."),
    timeout_s: float | None = typer.Option(None, "--timeout", help="Stop the script after this many seconds."),
    json_out: bool = typer.Option(False, "--json", help="Print the result (bucket shares, verdict) as JSON."),
) -> None:
    """Sort profiled time into GEMM, attention, copy/cast, other compute, communication, launch/Python
    overhead and device idle (host wait vs gaps), and say what to do next.

    Reads a Chrome trace from torch.profiler (with or without ProfilerStep, with or without
    distributedInfo; CPU-only traces too), or runs `python SCRIPT ARGS` under the profiler and writes
    its trace to --out. A script that crashes still leaves its partial trace; its traceback is read by
    `expkit why`'s reader and the command exits 1.

    Examples:

      expkit profile -- python train.py --steps 3

      expkit profile trace.json --json

      expkit profile --out run1.json -- python -m mypkg.train
    """
    from expkit.errors import CheckFailed, UsageError

    args = list(args or [])
    if not args:
        raise UsageError(
            "give a trace file or a command after '--'",
            hint="expkit profile trace.json  |  expkit profile -- python train.py",
        )
    from expkit.cli.app import invoked_argv

    if "--" not in invoked_argv(ctx):  # a path is read as a trace; running code needs the explicit '--'
        if len(args) == 1 and not args[0].endswith((".json", ".json.gz")):
            raise UsageError(
                f"{args[0]!r} is not a trace (.json or .json.gz); expkit runs code only after '--'",
                hint=f"to profile a script: expkit profile -- python {args[0]}",
            )
        if len(args) > 1:
            raise UsageError(
                f"give one trace file, or the command to run after '--' (got {' '.join(args)[:80]!r})",
                hint=f"expkit profile -- {' '.join(args)[:80]}",
            )
    if len(args) == 1 and args[0].endswith((".json", ".json.gz")):
        from expkit.perf.buckets import bucket_trace
        from expkit.perf.trace import load_trace

        rep = bucket_trace(load_trace(args[0]), top=max(top, 1))
        if json_out:
            emit_json(rep)
        else:
            _print_report(rep, top=top)
        return
    from expkit.errors import require
    from expkit.perf.profiler import profile_script

    require("torch")  # the script runs under torch.profiler; reading a trace needs no torch

    res = profile_script(args, trace_path=out, timeout_s=timeout_s)
    if json_out:
        emit_json(res)
    elif res.report is not None:
        _print_report(res.report, top=top)
        print(f"trace: {res.trace_path}")
    else:
        print(
            f"no torch op was recorded while {' '.join(res.argv)} ran ({res.elapsed_s:.1f} s); trace: {res.trace_path}"
        )
    if res.returncode == 0:
        return
    import sys

    summary = None
    if res.traceback:
        from expkit.diagnose import diagnose_text, format_report

        diag = diagnose_text(res.traceback)
        if diag.traceback.exceptions:
            last = diag.traceback.exceptions[-1]
            summary = f"{last.short_type}: {last.message}"
            if not json_out:
                print(format_report(diag.traceback, diag.explanation), file=sys.stderr)
        elif not json_out:
            print(res.traceback, file=sys.stderr)
    partial = "partial profile above, trace" if res.report is not None else "no op was recorded; trace"
    what = f"crashed ({summary})" if summary else f"exited with code {res.returncode}"
    raise CheckFailed(
        f"the script {' '.join(res.argv[:2]) if res.argv[0] in ('-m', '-c') else res.argv[0]} {what}",
        hint=f"{partial} in {res.trace_path}",
    )


def register(root: typer.Typer) -> None:
    root.command("profile", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(profile)
