"""``peak_memory``: run a function or a command in a fresh interpreter and report the peak resident
memory *the work* added above that interpreter's own baseline (VmHWM), plus the tracemalloc peak.

Why not ``ru_maxrss``: a child's ``ru_maxrss`` can report the parent's size (it survives fork and exec),
so a probe started from a large process would measure its parent. VmHWM of a fresh interpreter, reset
just before the work (``/proc/self/clear_refs``), measures only what the work touched.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from expkit.errors import ExpkitError, UsageError

__all__ = ["PeakMemory", "ProbeFailed", "peak_memory", "read_proc_status_bytes"]

Method = Literal["VmHWM", "VmHWM sampled", "ru_maxrss"]
_SAMPLE_S = 0.005
_MAX_RESULT_BYTES = 1 << 20  # a return value larger than this (pickled) is not sent back


class ProbeFailed(ExpkitError):
    """The measured work raised or exited non-zero; ``child_traceback`` holds its traceback text
    (``expkit why`` reads it)."""

    def __init__(self, message: str, *, child_traceback: str | None = None) -> None:
        super().__init__(message, hint="the traceback of the measured work follows" if child_traceback else None)
        self.child_traceback = child_traceback


@dataclass(frozen=True)
class PeakMemory:
    """Peak memory of one piece of work, measured in a fresh interpreter.

    Attributes:
        peak_above_baseline_bytes: the work's own memory: peak RSS minus the RSS just before it started
            (None for a non-Python command, whose baseline is unknown).
        baseline_rss_bytes: the interpreter's RSS right before the work (imports done). Not the work's.
        peak_rss_bytes: absolute peak RSS of the process (interpreter included). Not the work's.
        tracemalloc_peak_bytes: peak of Python allocations traced by tracemalloc, from a second run
            (tracemalloc's own bookkeeping would inflate RSS); None when not traced.
        elapsed_s: wall time of the work (the untraced run).
        method: VmHWM (exact, Linux), VmHWM sampled (a non-Python command, polled every 5 ms), or
            ru_maxrss (no /proc: macOS).
        result: what the function returned, when it pickles to at most 1 MiB; else None.
    """

    peak_above_baseline_bytes: int | None
    baseline_rss_bytes: int | None
    peak_rss_bytes: int
    tracemalloc_peak_bytes: int | None
    elapsed_s: float
    method: Method
    result: Any = field(default=None, repr=False)


def read_proc_status_bytes(field: str, pid: int | str = "self") -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` (VmRSS, VmHWM ...) in bytes; None without /proc."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def _target_spec(
    target: Callable[..., Any] | Sequence[str], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    if callable(target):
        from expkit.data.pool import check_picklable_function

        check_picklable_function(target)
        inner = getattr(target, "func", target)
        if getattr(inner, "__module__", None) == "__main__":
            raise UsageError(
                f"peak_memory cannot import {inner.__qualname__!r} from __main__ in a fresh interpreter",
                hint="define the function in an importable module, or pass argv of a script",
            )
        return {"mode": "call", "payload": pickle.dumps((target, args, kwargs))}
    argv = [str(a) for a in target]
    if not argv:
        raise UsageError("peak_memory got an empty argv")
    if args or kwargs:
        raise UsageError("args/kwargs go with a callable; for a command put them in argv")
    return {"mode": "argv", "argv": argv}


def _python_argv(argv: list[str]) -> list[str] | None:
    """``[script.py, ...]``, ``[python, script.py, ...]``, ``[python, -m, mod, ...]``, ``[python, -c, code]``:
    the part after the interpreter, or None for a non-Python command."""
    if argv[0].endswith(".py"):
        return argv
    if Path(argv[0]).name.startswith("python") and len(argv) >= 2:
        return argv[1:]
    return None


def _run_child(spec: dict[str, Any], trace: bool, timeout_s: float | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="expkit-peak-") as tmp:
        spec_path, out_path = Path(tmp) / "spec.pkl", Path(tmp) / "out.pkl"
        spec_path.write_bytes(pickle.dumps({**spec, "trace": trace, "sys_path": sys.path}))
        code = "import sys; from expkit.data.memory_probe import _child_main; _child_main(sys.argv[1], sys.argv[2])"
        proc = subprocess.run(
            [sys.executable, "-c", code, str(spec_path), str(out_path)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if not out_path.exists():
            raise ProbeFailed(
                f"the probe's interpreter died (exit {proc.returncode}) before reporting",
                child_traceback=proc.stderr[-20_000:] or None,
            )
        out = pickle.loads(out_path.read_bytes())
    if out.get("error"):
        raise ProbeFailed(
            f"the measured work failed: {out['error'].strip().splitlines()[-1]}", child_traceback=out["error"]
        )
    return out


def _sample_command(argv: list[str], timeout_s: float | None) -> PeakMemory:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        hwm = read_proc_status_bytes("VmHWM", proc.pid)
        peak = max(peak, hwm or 0)
        if timeout_s is not None and time.perf_counter() - t0 > timeout_s:
            proc.kill()
            raise ProbeFailed(f"{argv[0]} ran past {timeout_s} s")
        time.sleep(_SAMPLE_S)
    elapsed = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise ProbeFailed(f"{argv[0]} exited {proc.returncode}", child_traceback=err[-20_000:] or None)
    return PeakMemory(
        peak_above_baseline_bytes=None,
        baseline_rss_bytes=None,
        peak_rss_bytes=peak,
        tracemalloc_peak_bytes=None,
        elapsed_s=elapsed,
        method="VmHWM sampled",
    )


def peak_memory(
    target: Callable[..., Any] | Sequence[str],
    *args: Any,
    trace_python: bool = True,
    timeout_s: float | None = None,
    **kwargs: Any,
) -> PeakMemory:
    """Measure the peak memory of ``target(*args, **kwargs)`` or of a command, in a fresh interpreter.

    Args:
        target: a module-level function (or ``functools.partial`` of one), or an argv: a Python script
            (``["train.py", "--x"]``, ``[sys.executable, "-m", "mod"]``, ``[sys.executable, "-c", code]``)
            runs inside the probe's interpreter (exact); any other command is sampled.
        trace_python: also run once more under tracemalloc for the Python-allocation peak.
        timeout_s: give up after this long (per run).

    Returns:
        PeakMemory; ``peak_above_baseline_bytes`` is the work's own memory.

    Raises:
        UsageError: a lambda/nested function, a function from ``__main__``, an empty argv.
        ProbeFailed: the work raised or exited non-zero (its traceback in ``child_traceback``).

    Example:
        >>> import functools
        >>> m = peak_memory(functools.partial(bytearray, 100 * 2**20), trace_python=False)  # doctest: +SKIP
        >>> round(m.peak_above_baseline_bytes / 2**20)                                          # doctest: +SKIP
        100
    """
    spec = _target_spec(target, args, kwargs)
    if spec["mode"] == "argv":
        py = _python_argv(spec["argv"])
        if py is None:
            return _sample_command(spec["argv"], timeout_s)
        spec = {"mode": "python", "argv": py}
    out = _run_child(spec, False, timeout_s)
    traced = _run_child(spec, True, timeout_s)["tracemalloc_peak"] if trace_python else None
    return PeakMemory(
        peak_above_baseline_bytes=max(0, out["peak"] - out["baseline"]) if out["baseline"] else None,
        baseline_rss_bytes=out["baseline"],
        peak_rss_bytes=out["peak"],
        tracemalloc_peak_bytes=traced,
        elapsed_s=out["elapsed_s"],
        method=out["method"],
        result=out.get("result"),
    )


# ---- the child side: a fresh interpreter runs _child_main(SPEC, OUT) -------------------------------


def _reset_hwm() -> bool:
    """Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current RSS (proc(5))."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _run_python_argv(argv: list[str]) -> None:
    import runpy

    if argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the user's own code
    elif argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, str(Path(argv[0]).resolve().parent))
        runpy.run_path(argv[0], run_name="__main__")


def _child_main(spec_path: str, out_path: str) -> None:
    import gc
    import traceback
    import tracemalloc

    spec = pickle.loads(Path(spec_path).read_bytes())
    sys.path[:] = spec["sys_path"]
    out: dict[str, Any] = {"error": None}
    call = None
    if spec["mode"] == "call":
        fn, args, kwargs = pickle.loads(spec["payload"])
        call = lambda: fn(*args, **kwargs)  # noqa: E731
    else:
        call = lambda: _run_python_argv(spec["argv"])  # noqa: E731
    gc.collect()
    has_proc = _reset_hwm() and read_proc_status_bytes("VmHWM") is not None
    if has_proc:
        out["baseline"] = read_proc_status_bytes("VmRSS")
    else:
        import resource

        out["baseline"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    if spec["trace"]:
        tracemalloc.start()
    t0 = time.perf_counter()
    result = None
    try:
        result = call()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            out["error"] = f"SystemExit: exit code {exc.code}"
    except BaseException:  # noqa: BLE001 - reported to the parent with its traceback
        out["error"] = traceback.format_exc()
    out["elapsed_s"] = time.perf_counter() - t0
    if spec["trace"]:
        out["tracemalloc_peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    if has_proc:
        out["peak"], out["method"] = read_proc_status_bytes("VmHWM"), "VmHWM"
    else:
        import resource

        out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        out["method"] = "ru_maxrss"
    try:
        blob = pickle.dumps(result)
        out["result"] = result if len(blob) <= _MAX_RESULT_BYTES else None
    except Exception:  # noqa: BLE001 - an unpicklable return value is simply not reported
        out["result"] = None
    Path(out_path).write_bytes(pickle.dumps(out))
