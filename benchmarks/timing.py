"""Timers the benchmarks share: the median of repeats, wall clock or CPU time (the machines are noisy); the run
options every benchmark takes; and its goals, checked with ``--check``.

How a benchmark declares and checks its goals (issue 36):

    from timing import Goal, add_run_options, finish  # benchmarks/timing.py

    args = parser.parse_args()          # add_run_options(parser) gave --quick, --out DIR and --check
    ...
    goals = [
        Goal("iter_jsonl / orjson parse floor", ours / floor, 0.90, ">="),   # higher is better
        Goal("overhead per item (us)", overhead_us, 50.0, "<="),            # lower is better
    ]
    return finish(results, goals, args, "data")   # main() returns it; the script ends in sys.exit(main())

``finish`` prints every goal with its figure and "met" or "MISSED", writes the JSON (the goals included), and
closes with a note that lists every miss. With ``--check`` a miss makes it return 1 (a CI gate can trust the exit
code); without, 0. A ``--quick`` run's figures come from tiny sizes: its goals are printed but a miss is not
checked (``--check`` gates full runs), unless the goal says ``quick=True`` (a figure tiny sizes do not change,
e.g. a count that must match).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal


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
        "--check",
        action="store_true",
        help="exit 1 when a figure misses its goal (every miss is listed at the end); without it the goals are "
        "printed and the exit code is 0",
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


@dataclass(frozen=True)
class Goal:
    """One figure a benchmark promises: ``measured`` against ``goal`` in ``direction`` (">=": higher is better,
    "<=": lower is better). ``quick``: also checked in a ``--quick`` run (only for figures tiny sizes keep)."""

    name: str
    measured: float
    goal: float
    direction: Literal[">=", "<="]
    quick: bool = False

    @property
    def met(self) -> bool:
        """The figure is on the right side of the goal (a NaN figure never is)."""
        if math.isnan(self.measured):
            return False
        return self.measured >= self.goal if self.direction == ">=" else self.measured <= self.goal

    def line(self) -> str:
        verdict = "met" if self.met else "MISSED"
        return f"{self.name}: {self.measured:.4g} (goal {self.direction} {self.goal:g}) {verdict}"


def check_goals(goals: Sequence[Goal], *, check: bool, quick: bool) -> int:
    """Print every goal and a closing note that lists every miss; return 1 if ``check`` and a checked goal missed
    (in a ``--quick`` run only the goals marked ``quick`` are checked), else 0."""
    if not goals:
        return 0
    print("goals:")
    for g in goals:
        print(f"  {g.line()}")
    checked = [g for g in goals if g.quick or not quick]
    missed = [g for g in goals if not g.met]
    gating = [g for g in checked if not g.met]
    if not missed:
        print(f"all {len(goals)} goals met")
    else:
        note = "; ".join(g.line() for g in missed)
        print(f"{len(missed)} of {len(goals)} goals missed: {note}")
        if quick and len(gating) < len(missed):
            print("(--quick: tiny sizes, so only goals marked quick are checked)")
    if check and gating:
        print(f"--check: {len(gating)} goal(s) missed, exit 1")
        return 1
    return 0


def finish(results: dict, goals: Sequence[Goal], args: argparse.Namespace, stage: str) -> int:
    """Write ``results`` with the goals (``write_results``), print the goals and the misses, and return the exit
    code (``check_goals``): the last line of a benchmark's ``main()``."""
    results = {**results, "goals": [{**asdict(g), "met": g.met} for g in goals]}
    write_results(results, args.out, stage, quick=args.quick)
    return check_goals(goals, check=getattr(args, "check", False), quick=args.quick)
