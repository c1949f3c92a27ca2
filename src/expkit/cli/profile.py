"""``expkit profile``: run a script under torch.profiler (or read a trace) and sort its time into buckets."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit


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
    from expkit.errors import UsageError

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
        from expkit.render.profile import render_profile_report

        rep = bucket_trace(load_trace(args[0]), top=max(top, 1))
        emit(rep, json_out, human=lambda r: render_profile_report(r, top=top))
        return
    from expkit.cli.flags import fields_as_flags
    from expkit.errors import require
    from expkit.perf.profiler import profile_script
    from expkit.render.profile import render_script_profile

    require("torch")  # the script runs under torch.profiler; reading a trace needs no torch
    if timeout_s is not None and not 0 < timeout_s < float("inf"):  # the library says timeout_s; name the option
        raise UsageError(f"--timeout {timeout_s} must be a finite number of seconds > 0", hint="e.g. --timeout 600")
    with fields_as_flags({"trace_path": "--out"}):
        res = profile_script(args, trace_path=out, timeout_s=timeout_s)
    emit(res, json_out, human=lambda r: render_script_profile(r, top=top))
    res.raise_if_failed()


def register(root: typer.Typer) -> None:
    root.command("profile", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(profile)
