"""Profile a step function or a whole script with torch.profiler and read the trace into buckets.

``profile(step_fn, steps=N)`` also times the same steps without the profiler and reports the ratio
(profiling overhead). ``profile_script(argv)`` runs a script in a child Python under the profiler;
when the script crashes the partial trace is still written and its traceback is returned.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from expkit.data.sources import check_replaceable
from expkit.errors import CheckFailed, InputError, UsageError
from expkit.perf.buckets import ProfileReport, bucket_trace
from expkit.perf.trace import load_trace

if TYPE_CHECKING:
    from expkit.diagnose.diagnosis import Diagnosis

__all__ = ["ScriptProfile", "profile", "profile_script"]


MAX_TIMEOUT_S = 30 * 24 * 3600
"""The longest --timeout: 30 days. 2**64 s overflowed the wait of subprocess (OverflowError, exit 3)."""


def _timed_steps(step_fn: Callable[[], object], n: int, sync: Callable[[], None]) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step_fn()
        sync()
        times.append(time.perf_counter() - t0)
    return times


def profile(
    step_fn: Callable[[], object],
    *,
    steps: int = 3,
    warmup: int = 1,
    trace_path: str | Path | None = None,
    measure_overhead: bool = True,
) -> ProfileReport:
    """Run ``step_fn`` under torch.profiler (CPU, and CUDA when available) and bucket the trace.

    Args:
        step_fn: one training or inference step; called ``warmup + steps`` times (plus ``warmup + 2 steps``
            plain ones with ``measure_overhead``).
        steps: profiled steps (ProfilerStep windows), >= 1.
        warmup: steps run under the profiler's warm-up phase first (not recorded), >= 0.
        trace_path: where to keep the Chrome trace (default: a temporary file, deleted).
        measure_overhead: also time ``steps`` plain steps before and ``steps`` after the profiled ones and
            report profiled / plain median step time.

    Returns:
        ProfileReport with ``profiling_overhead_ratio`` and ``trace_path`` (when kept).

    Raises:
        UsageError: steps < 1 or warmup < 0.

    Example:
        >>> import torch
        >>> a = torch.randn(256, 256)
        >>> rep = profile(lambda: a @ a, steps=2, measure_overhead=False)
        >>> rep.dominant
        'gemm'
    """
    import torch
    from torch.profiler import ProfilerActivity, schedule

    if steps < 1 or warmup < 0:
        raise UsageError(f"steps={steps} must be >= 1 and warmup={warmup} >= 0")
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    plain: list[float] = []
    if measure_overhead:  # plain steps before and after the profiled ones, so drift does not bias the ratio
        _timed_steps(step_fn, warmup, sync)
        plain = _timed_steps(step_fn, steps, sync)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(trace_path) if trace_path else Path(tmp) / "trace.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        profiled: list[float] = []
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Profiler clears events", category=UserWarning)
            with torch.profiler.profile(
                activities=activities,
                schedule=schedule(wait=0, warmup=warmup, active=steps),
                on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
            ) as prof:
                for i in range(warmup + steps):
                    t0 = time.perf_counter()
                    step_fn()
                    sync()
                    if i >= warmup:
                        profiled.append(time.perf_counter() - t0)
                    prof.step()
        report = bucket_trace(load_trace(path))
    if measure_overhead:
        plain += _timed_steps(step_fn, steps, sync)
    ratio = statistics.median(profiled) / statistics.median(plain) if plain else None
    return replace(
        report,
        source="expkit.perf.profile(step_fn)",
        profiling_overhead_ratio=ratio,
        trace_path=str(path) if trace_path else None,
    )


@dataclass(frozen=True)
class ScriptProfile:
    """A script run under the profiler: its exit code, the trace (possibly partial) and, when it crashed,
    its traceback text. ``report`` is None only when the script died before any op was recorded."""

    argv: tuple[str, ...]
    returncode: int
    elapsed_s: float
    trace_path: str
    report: ProfileReport | None
    traceback: str | None
    stderr_tail: str

    def diagnosis(self) -> Diagnosis | None:
        """``expkit why``'s reading of the script's traceback, when it crashed with one."""
        if not self.traceback:
            return None
        from expkit.diagnose import diagnose_text

        return diagnose_text(self.traceback)

    def raise_if_failed(self) -> None:
        """CheckFailed when the script exited non-zero: its last exception, and where the trace is."""
        if self.returncode == 0:
            return
        diag = self.diagnosis()
        summary = None
        if diag is not None and diag.traceback.exceptions:
            last = diag.traceback.exceptions[-1]
            summary = f"{last.short_type}: {last.message}"
        partial = "partial profile above, trace" if self.report is not None else "no op was recorded; trace"
        what = f"crashed ({summary})" if summary else f"exited with code {self.returncode}"
        script = " ".join(self.argv[:2]) if self.argv[0] in ("-m", "-c") else self.argv[0]
        raise CheckFailed(f"the script {script} {what}", hint=f"{partial} in {self.trace_path}")


def _script_argv(argv: list[str] | tuple[str, ...]) -> list[str]:
    args = list(argv)
    if args and Path(args[0]).name.startswith("python"):
        args = args[1:]  # "python script.py ..." -> "script.py ..."
    if not args:
        raise UsageError("no script given", hint="give the command, e.g. python train.py --steps 10")
    if args[0] not in ("-m", "-c") and not Path(args[0]).is_file():
        raise InputError("no such script", path=args[0])
    return args


def profile_script(
    argv: list[str] | tuple[str, ...],
    *,
    trace_path: str | Path,
    timeout_s: float | None = None,
) -> ScriptProfile:
    """Run ``python ARGV...`` in a child process under torch.profiler and bucket its trace.

    Args:
        argv: the command after ``--``, e.g. ``["python", "train.py", "--steps", "3"]``, ``["-m", "pkg.mod"]``
            or ``["-c", "code"]``.
        trace_path: where the Chrome trace is written (also when the script crashes).
        timeout_s: kill the script after this many seconds (None: no limit).

    Returns:
        ScriptProfile; a crashed script has a nonzero ``returncode`` and ``traceback`` set.

    Raises:
        UsageError: no script, a timeout that is not a finite number > 0, a trace path that is a directory.
        InputError: the script file does not exist, the trace's folder cannot be created or written, the
            trace could not be written (a full disk).
    """
    args = _script_argv(argv)
    if timeout_s is not None and not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise UsageError(
            f"timeout_s {timeout_s} must be a number of seconds in (0, {MAX_TIMEOUT_S:,}] (30 days)", hint="e.g. 600"
        )
    trace = Path(trace_path)
    if trace.is_dir():
        raise UsageError(
            f"trace_path {trace} is a directory; give the trace file to write",
            hint=f"e.g. {trace / 'profile_trace.json'}",
        )
    check_replaceable(trace)  # torch renames its trace into place: /dev/null (as root) or a FIFO would be replaced
    try:
        trace.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder for the trace ({exc.strerror})", path=trace.parent) from None
    if not os.access(trace.parent, os.W_OK):  # a read-only folder: refused before the script runs
        raise InputError("cannot write the trace here (the folder is not writable)", path=trace.parent)
    err_file = trace.with_suffix(".traceback.txt")
    err_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "expkit.perf.script_profiler", str(trace), str(err_file), "--", *args]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"the script ran longer than {timeout_s} s and was stopped") from exc
    elapsed = time.perf_counter() - t0
    from expkit.perf.script_profiler import TRACE_WRITE_FAILED

    for line in proc.stderr.splitlines():
        if line.startswith(TRACE_WRITE_FAILED):  # the ops were recorded, the trace could not be kept
            raise InputError(f"cannot write the trace: {line[len(TRACE_WRITE_FAILED) :]}", path=trace)
    tb = err_file.read_text(encoding="utf-8") if err_file.is_file() else None
    if proc.returncode != 0 and tb is None and "Traceback (most recent call last)" in proc.stderr:
        tb = proc.stderr[proc.stderr.rindex("Traceback (most recent call last)") :]  # died outside the runner
    report = None
    if trace.is_file():
        try:
            report = replace(bucket_trace(load_trace(trace)), source=" ".join(args), trace_path=str(trace))
        except InputError:
            report = None  # died before the first op: nothing to bucket
    return ScriptProfile(
        argv=tuple(args),
        returncode=proc.returncode,
        elapsed_s=elapsed,
        trace_path=str(trace),
        report=report,
        traceback=tb,
        stderr_tail=proc.stderr[-2000:],
    )
