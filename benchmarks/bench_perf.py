"""Benchmark the perf stage side by side with its peers, in one run.

1. Measured roofs vs the references: ``expkit roofline measure`` (torch.matmul n=2048, the faster of
   torch copy_ and libc memcpy on 256 MiB) against torch.matmul on a 4096 x 4096 matrix and a numpy copy of a
   1 GiB array, in the same run. Targets: GEMM >= 0.70 of the reference, bandwidth within 20% of numpy's.
2. Profiling overhead: one char-LM training step (expkit.train) with and without torch.profiler.
3. Buckets vs torch's own table: expkit's GEMM self time from the exported trace against
   ``prof.key_averages()`` self CPU time of aten::mm/addmm/bmm for the same profiled steps.

    .venv/bin/python benchmarks/bench_perf.py [--repeats 3] [--threads N] [--quick]

``--quick`` (CI): tiny sizes and one repeat, seconds in all; it checks that the comparison still runs,
its ratios are not the benchmark's figures.

Prints ratios (median of repeats) and writes benchmarks/results/perf.json. The machine may be shared:
read the ratios with the load average printed beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from timing import Goal, add_run_options, finish  # benchmarks/timing.py

os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # kineto's USDT lines off, as `labs run` has them

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def bench_roofs(repeats: int, threads: int | None, quick: bool = False) -> dict:
    from expkit.perf.roofs import RoofQuery, measure_roofs

    query = (
        RoofQuery(gemm_n=256, copy_bytes=16 * 2**20, repeats=2, reference_n=512, reference_copy_bytes=32 * 2**20)
        if quick
        else RoofQuery(gemm_n=2048, copy_bytes=256 * 2**20, repeats=5, reference_n=4096, reference_copy_bytes=2**30)
    )
    runs = [measure_roofs(replace(query, compare=True, threads=threads)) for _ in range(repeats)]
    g = statistics.median(r.gemm_vs_reference_ratio for r in runs)
    b = statistics.median(r.bandwidth_vs_reference_ratio for r in runs)
    return {
        "gemm_vs_torch_matmul_4096": g,
        "bandwidth_vs_numpy_copy_1gib": b,
        "gemm_gflop_s": [r.peak_flop_s / 1e9 for r in runs],
        "reference_gemm_gflop_s": [r.reference_gemm.best_flop_s / 1e9 for r in runs],
        "bandwidth_gb_s": [r.bandwidth_bytes_s / 1e9 for r in runs],
        "numpy_bandwidth_gb_s": [r.reference_copy.best_bandwidth_bytes_s / 1e9 for r in runs],
        "threads": runs[0].threads,
        "copy_methods": [r.copy.method for r in runs],
        "gemm_target_met": g >= 0.70,
        "bandwidth_target_met": abs(b - 1) <= 0.20,
    }


def _charlm_step():  # noqa: ANN202
    from expkit.labs.lab_c6_6_profile import _charlm_step as step

    return step(0)[0]


def bench_profiler(repeats: int, threads: int | None) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, schedule

    from expkit.hardware.threads import torch_threads
    from expkit.perf.buckets import bucket_trace
    from expkit.perf.profiler import profile
    from expkit.perf.trace import load_trace

    step = _charlm_step()
    with torch_threads(threads):
        ratios = [profile(step, steps=3, warmup=1).profiling_overhead_ratio for _ in range(repeats)]
        agreement = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "t.json"
                table: list[float] = []

                def ready(p, path=path, table=table):  # noqa: ANN001 - both readings of the same cycle
                    p.export_chrome_trace(str(path))
                    table.append(sum(e.self_cpu_time_total for e in p.key_averages() if e.key in GEMM_OPS) / 1e6)

                with torch.profiler.profile(
                    activities=[ProfilerActivity.CPU],
                    schedule=schedule(wait=0, warmup=1, active=2),
                    on_trace_ready=ready,
                ) as prof:
                    for _ in range(3):
                        step()
                        prof.step()
                ours = sum(o.self_s for o in bucket_trace(load_trace(path), top=10_000).top_ops if o.name in GEMM_OPS)
                theirs = table[0]
                agreement.append(ours / theirs if theirs else float("nan"))
    return {
        "profiling_overhead_ratio": statistics.median(ratios),
        "overhead_ratios": ratios,
        "gemm_self_time_vs_key_averages": statistics.median(agreement),
        "agreement_ratios": agreement,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's default)")
    add_run_options(parser)  # --quick (tiny sizes, one repeat) and --out DIR, as every benchmark takes them
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    load = os.getloadavg()[0]
    roofs = bench_roofs(repeats, args.threads, quick=args.quick)
    prof = bench_profiler(repeats, args.threads)
    print(f"load average at start: {load:.2f} on {os.cpu_count()} CPUs (shared machine: ratios are noisy)")
    print(f"[roofs] threads {roofs['threads']}")
    if args.quick:
        print("  (quick: GEMM n=256 vs 512, copy 16 vs 32 MiB; too small for the targets, which are not judged)")
    print(
        f"  expkit GEMM (n=2048) / torch.matmul n=4096:  {roofs['gemm_vs_torch_matmul_4096']:.2f}  "
        f"(target >= 0.70: {'met' if roofs['gemm_target_met'] else 'NOT met'})"
    )
    print(
        f"  expkit copy 256 MiB / numpy copy 1 GiB:      {roofs['bandwidth_vs_numpy_copy_1gib']:.2f}  "
        f"(target 0.80-1.20: {'met' if roofs['bandwidth_target_met'] else 'NOT met'})"
    )
    print(f"  GFLOP/s ours {roofs['gemm_gflop_s']} vs ref {roofs['reference_gemm_gflop_s']}")
    print(f"  GB/s ours {roofs['bandwidth_gb_s']} ({roofs['copy_methods']}) vs numpy {roofs['numpy_bandwidth_gb_s']}")
    print("[profiler] char-LM training step")
    ratio = prof["profiling_overhead_ratio"]
    print(f"  profiled / plain step time:                 {ratio:.2f}  {prof['overhead_ratios']}")
    print(f"  expkit GEMM self time / key_averages:       {prof['gemm_self_time_vs_key_averages']:.3f}")
    goals = [
        Goal("expkit GEMM / torch.matmul n=4096", roofs["gemm_vs_torch_matmul_4096"], 0.70, ">="),
        Goal("expkit copy / numpy copy (low side)", roofs["bandwidth_vs_numpy_copy_1gib"], 0.80, ">="),
        Goal("expkit copy / numpy copy (high side)", roofs["bandwidth_vs_numpy_copy_1gib"], 1.20, "<="),
    ]
    return finish({"load_average": load, "roofs": roofs, "profiler": prof}, goals, args, "perf")


if __name__ == "__main__":
    sys.exit(main())
