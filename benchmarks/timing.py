"""Timers the benchmarks share: the median of repeats, wall clock or CPU time (the machines are noisy)."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path


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


RESULTS_DIR = Path(__file__).resolve().parent / "results"
"""Where a full run writes ``<stage>.json`` unless ``--out DIR`` says otherwise."""


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--quick`` (tiny sizes, one repeat: seconds, for CI; the figures mean nothing) and ``--out DIR``."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes and one repeat, for CI (tests/test_benchmarks_quick.py): checks that the "
        "benchmark and its peers still run; its figures are not comparisons",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS_DIR,
        metavar="DIR",
        help=f"directory for the JSON results (default: {RESULTS_DIR})",
    )


def write_results(results: dict, out_dir: Path, stage: str, *, quick: bool) -> Path:
    """Write ``out_dir/<stage>.json`` (``<stage>.quick.json`` for a quick run, so it never overwrites a full
    run's figures) and say where."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stage}{'.quick' if quick else ''}.json"
    path.write_text(json.dumps({"quick": quick, **results}, indent=2))
    print(f"wrote {path}")
    return path
