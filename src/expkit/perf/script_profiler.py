"""The child-process side of ``expkit profile -- python SCRIPT ...``: run the script under torch.profiler.

Usage: ``python -m expkit.perf.script_profiler TRACE.json TRACEBACK.txt -- SCRIPT [ARGS...]`` (or
``-- -m MODULE [ARGS...]``, ``-- -c CODE [ARGS...]``). The trace is exported even when the script raises; the
traceback text then goes to TRACEBACK.txt and the exit code is 1. ``SystemExit`` keeps the script's own code.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path


def _format_script_error(exc: BaseException) -> str:
    """The traceback as Python prints it, without this runner's and runpy's frames."""
    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if f.filename != __file__ and not f.filename.startswith("<frozen runpy")]
    )
    return "".join(te.format())


# the line this runner prints on stderr when the trace cannot be written, followed by the OS's reason
TRACE_WRITE_FAILED = "expkit-profile: cannot write the trace: "


def main(argv: list[str]) -> int:
    trace_path, err_path, sep, *script = argv
    if sep != "--" or not script:
        raise SystemExit("usage: python -m expkit.perf.script_profiler TRACE TRACEBACK -- SCRIPT [ARGS...]")
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    code = 0
    prof = torch.profiler.profile(activities=activities)
    prof.start()
    try:
        if script[0] == "-c":
            sys.argv = ["-c", *script[2:]]
            exec(compile(script[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - python -c
        elif script[0] == "-m":
            sys.argv = script[1:]
            runpy.run_module(script[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(script)
            sys.path.insert(0, str(Path(script[0]).resolve().parent))
            runpy.run_path(script[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - the script's crash is reported, the trace still written
        Path(err_path).write_text(_format_script_error(exc), encoding="utf-8")
        code = 1
    finally:
        prof.stop()
        problem = _export(prof, Path(trace_path))
        if problem is not None:  # the parent says so instead of "no torch op was recorded"
            # the child's exit message (stderr, exit 1) is the protocol: it needs no disk, which may be full
            raise SystemExit(f"{TRACE_WRITE_FAILED}{problem}")
    return code


def _export(prof: object, path: Path) -> str | None:
    """Write the Chrome trace; None when it was written whole, else why not. Kineto's C++ writer drops write
    errors (a full disk or ``ulimit -f`` leaves a cut file and no exception): a trace that does not end in
    the closing brace is cut, and one more write to it surfaces the OS's reason."""
    try:
        prof.export_chrome_trace(str(path))  # type: ignore[attr-defined]
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - 64))
            tail = fh.read().rstrip()
        if tail.endswith(b"}"):
            return None
        with path.open("ab") as fh:  # the trace is cut: this write fails as the writer's did
            fh.write(b" " * 4096)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return exc.strerror or str(exc)
    return "the trace file was cut short"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
