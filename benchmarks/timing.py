"""Timers the benchmarks share: the median of repeats, wall clock or CPU time (the machines are noisy)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (git): a figure the shared cores do not inflate."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def median_wall_s(fn: Callable[[], object], repeats: int) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def median_cpu_s(fn: Callable[[], object], repeats: int) -> float:
    """Median CPU seconds (``cpu_s``) of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        c0 = cpu_s()
        fn()
        times.append(cpu_s() - c0)
    return statistics.median(times)
