"""Lab C1.2: CPU-bound Python does not run in parallel on threads (the GIL); a process pool does, up to
the number of cores this machine has."""

from __future__ import annotations

import os
import statistics
import time

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict, verdict_within
from expkit.labs.registry import lab

SEED_SERIAL = SeedFigure("serial_s", "serial preprocessing time", 0.46, "s", "serial 0.46 s")
SEED_THREADS = SeedFigure("thread_speedup", "8 threads vs serial", 1.0, "x", "8 threads 0.46 s (GIL)")
SEED_PROCS = SeedFigure("process_speedup", "8 processes vs serial", 3.1, "x", "8 processes 0.15 s (3.1x)")
N_ITEMS = 16


def tokenize_like(n: int) -> int:
    """Pure-Python CPU work standing in for preprocessing: split, normalize and hash n short strings."""
    acc = 0
    for i in range(n):
        text = f"Sample {i} of the training set, lower-cased and split"
        for word in text.lower().split():
            acc = (acc * 31 + hash(word)) & 0xFFFFFFFF
    return acc


def _calibrate(target_s: float) -> int:
    """Items sizes so that N_ITEMS items take about ``target_s`` serially on this machine."""
    n = 2000
    while True:
        t0 = time.perf_counter()
        tokenize_like(n)
        dt = time.perf_counter() - t0
        if dt > 0.02:
            return max(1, int(n * target_s / N_ITEMS / dt))
        n *= 2


def _thread_verdict(speedup: float) -> Verdict:
    """The claim is *no* speed-up from threads: within 0.25 of 1x reproduces it; slower still shows no
    parallelism (the GIL changing hands costs time); faster than 1.25x would contradict it."""
    if speedup > 1.25:
        return Verdict("not reproduced", f"threads ran {speedup:.2f}x faster: the work released the GIL?")
    if speedup < 0.75:
        return Verdict("differs", f"threads were slower than serial ({speedup:.2f}x): no parallelism, plus the cost "
                                  "of handing the GIL between threads on busy cores")
    return verdict_within(speedup, SEED_THREADS.value, abs_tol=0.25)


def _process_verdict(speedup: float, why: str, load: float, cores: int) -> Verdict:
    if speedup > 1.3:
        return verdict_within(speedup, SEED_PROCS.value, rel_tol=0.2, differs_reason=why)
    if load >= cores:  # other processes held the cores: the pool had nothing free to run on
        return Verdict("differs", f"only {speedup:.2f}x: the cores were busy (load average {load:.1f} on {cores} cores)")
    return Verdict("not reproduced", f"processes gave only {speedup:.2f}x on {cores} idle-ish cores")


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


@lab(id="C1.2", title="GIL: threads vs processes on CPU-bound work", claims=("C1.2",),
     seed=(SEED_SERIAL, SEED_THREADS, SEED_PROCS))
def run(ctx: LabContext) -> LabOutput:
    from expkit.data import default_workers, parallel_map
    from expkit.render.figures import new_figure, save_figure

    cores = default_workers()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    workers = max(2, cores)
    size = _calibrate(0.5)
    items = [size] * N_ITEMS
    repeats = 1 if ctx.quick else 5
    serial, threads, procs = [], [], []
    for _ in range(repeats):
        serial.append(_time(lambda: [tokenize_like(x) for x in items]))
        threads.append(_time(lambda: list(parallel_map(tokenize_like, items, workers=workers, chunksize=1,
                                                       backend="thread"))))
        procs.append(_time(lambda: list(parallel_map(tokenize_like, items, workers=workers, chunksize=1,
                                                     backend="process"))))
    t_serial, t_thread, t_proc = (statistics.median(v) for v in (serial, threads, procs))
    s_thread, s_proc = t_serial / t_thread, t_serial / t_proc
    limit = min(workers, cores)

    fig, (ax,) = new_figure(1)
    ax.bar(["serial", f"{workers} threads", f"{workers} processes"], [t_serial, t_thread, t_proc], color=["C7", "C0", "C1"])
    ax.axhline(t_serial / limit, color="C3", ls="--", lw=1, label=f"serial / {limit} cores (physical limit)")
    ax.set(ylabel="wall time (s), median", title=f"CPU-bound work, {N_ITEMS} items, {cores} cores")
    ax.legend()
    figure = save_figure(fig, ctx.figure_path("c1_2_gil.png"))

    why_proc = (f"this machine has {cores} cores (the seed used 8 workers): the ceiling is {limit}x, and the cores "
                "are shared with other work")
    measurements = (
        Measurement("serial_s", "serial time (workload calibrated to ~0.5 s)", t_serial, "s", None, SEED_SERIAL,
                    detail="the workload is sized to the seed's, so this is a setting, not a verdict"),
        Measurement("thread_speedup", f"{workers} threads vs serial", s_thread, "x",
                    _thread_verdict(s_thread), SEED_THREADS,
                    detail=f"{t_thread:.3f} s"),
        Measurement("process_speedup", f"{workers} processes vs serial", s_proc, "x",
                    _process_verdict(s_proc, why_proc, load, cores), SEED_PROCS,
                    detail=f"{t_proc:.3f} s; load average {load:.1f} on {cores} cores before the run"),
        Measurement("process_efficiency", "process speed-up / physical limit", s_proc / limit, "",
                    detail=f"limit = min(workers, cores) = {limit}"),
    )
    explanation = (
        f"{N_ITEMS} items of pure-Python string work took {t_serial:.2f} s serially. {workers} threads took "
        f"{t_thread:.2f} s ({s_thread:.2f}x): the GIL lets one thread run Python bytecode at a time, so CPU-bound "
        f"threads take turns instead of running together. {workers} processes took {t_proc:.2f} s ({s_proc:.2f}x): "
        f"each has its own interpreter and GIL. The seed's 3.1x came from 8 processes; with {cores} cores the "
        f"physical limit here is {limit}x, and pool start-up and result pickling eat part of it. Median of "
        f"{repeats} run(s); load average before the run was {load:.1f} on {cores} cores: other processes "
        "competing for the cores lower the process speed-up, which only shows when cores are idle."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(figure,))
