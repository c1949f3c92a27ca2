"""Benchmark the data stage side by side with its peers, in one run, on a generated JSONL file.

Readers (each in a fresh interpreter via expkit.data.peak_memory, so peak memory is the reader's own):
raw ``for line in f`` loop (the floor), expkit ``iter_jsonl``, stdlib ``json`` load-into-list,
``pandas.read_json(lines=True)``, the ``datasets`` json loader. Then streaming flatness (1x vs 8x file)
and ``parallel_map`` (speed-up on CPU-bound work, per-item overhead with chunking).

    .venv/bin/python benchmarks/bench_data.py [--size-mb 200] [--repeats 3] [--quick] [--check] [--out DIR]

Prints ratios (median of repeats) and writes benchmarks/results/data.json (``--quick``: a 0.5 MB file, one
repeat, a ~0.05 s pool workload; data.quick.json, for CI: it checks that every peer still runs). The machine
may be shared: read the ratios with the load average printed beside them. ``--check``: exit 1 when a figure
misses its goal (benchmarks/timing.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from expkit.data import default_workers, iter_jsonl, parallel_map, peak_memory
from expkit.labs.lab_c1_1_streaming import write_base_file
from expkit.labs.lab_c1_2_gil import tokenize_like
from timing import Goal, add_run_options, finish  # benchmarks/timing.py

MB = 1e6


def read_raw_lines(path: str) -> int:
    n = 0
    with open(path, "rb") as f:
        for _ in f:
            n += 1
    return n


def read_orjson_loop(path: str) -> int:
    """The parse floor: orjson.loads on each line, no generator, no error handling."""
    import orjson

    loads = orjson.loads
    n = 0
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            n += 1
    return n


def read_iter_jsonl(path: str) -> int:
    n = 0
    for _ in iter_jsonl(path):
        n += 1
    return n


def read_json_list(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return len([json.loads(line) for line in f])


def read_pandas(path: str) -> int:
    import pandas as pd

    return len(pd.read_json(path, lines=True))


def read_datasets(path: str, cache_dir: str) -> int:
    import datasets

    datasets.disable_progress_bars()
    return len(datasets.load_dataset("json", data_files=path, split="train", cache_dir=cache_dir))


def noop(x: int) -> int:
    return x


def _measure(fn, *args, repeats: int) -> dict:
    runs = [peak_memory(fn, *args, trace_python=False) for _ in range(repeats)]
    return {
        "elapsed_s": statistics.median(r.elapsed_s for r in runs),
        "peak_above_baseline_mb": statistics.median(r.peak_above_baseline_bytes for r in runs) / MB,
        "peak_rss_mb": statistics.median(r.peak_rss_bytes for r in runs) / MB,
        "records": runs[0].result,
    }


def _importable():
    """This file as an importable module: peak_memory's fresh interpreter cannot import __main__."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_data

    return bench_data


def _bench_readers(path: Path, size: int, repeats: int, tmp: str, only: tuple[str, ...] | None = None) -> dict:
    import functools

    m = _importable()

    readers = {
        "raw line loop": functools.partial(m.read_raw_lines, str(path)),
        "orjson loop (parse floor)": functools.partial(m.read_orjson_loop, str(path)),
        "expkit iter_jsonl": functools.partial(m.read_iter_jsonl, str(path)),
        "stdlib json list": functools.partial(m.read_json_list, str(path)),
        "pandas.read_json(lines=True)": functools.partial(m.read_pandas, str(path)),
        "datasets json loader": None,
    }
    chosen = [name for name in readers if only is None or name in only]
    runs: dict[str, list[dict]] = {name: [] for name in chosen}
    # rounds: every reader once per round, so a burst of load on the shared machine hits all of them
    for _ in range(repeats):
        for name in chosen:
            fn = readers[name]
            if fn is None:  # a fresh cache directory per run, so every run parses (no Arrow cache hit)
                fn = functools.partial(m.read_datasets, str(path), tempfile.mkdtemp(dir=tmp))
            runs[name].append(_measure(fn, repeats=1))
    out = {}
    for name in chosen:
        keys = ("elapsed_s", "peak_above_baseline_mb", "peak_rss_mb")
        r = {k: statistics.median(x[k] for x in runs[name]) for k in keys}
        r["records"] = runs[name][0]["records"]
        r["mb_per_s"] = size / MB / r["elapsed_s"]
        out[name] = r
        print(
            f"  {name:30s} {r['mb_per_s']:8.1f} MB/s   peak {r['peak_above_baseline_mb']:8.1f} MB above baseline"
            f"   ({r['records']} records)",
            flush=True,
        )
    return out


def _floor_ratio_in_process(path: Path, repeats: int) -> dict:
    """iter_jsonl against the orjson parse floor, interleaved in this one process (CPU time, median of
    ``repeats`` rounds): the figure the 0.90 goal judges. Fresh interpreters per reader (above) add start-up and
    page-cache noise of their own; in one process both readers see the same file, cache and load."""
    floor, ours = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        read_orjson_loop(str(path))
        floor.append(time.process_time() - c0)
        c0 = time.process_time()
        read_iter_jsonl(str(path))
        ours.append(time.process_time() - c0)
    return {
        "repeats": repeats,
        "orjson_floor_cpu_s": statistics.median(floor),
        "iter_jsonl_cpu_s": statistics.median(ours),
        "ratio": statistics.median(floor) / statistics.median(ours),
    }


def _bench_pool(repeats: int, *, serial_s: float = 0.5, overhead_items: int = 200_000) -> dict:
    workers = default_workers()
    size = 1
    while True:  # size the CPU-bound workload to ~0.5 s serial (the seed's)
        t0 = time.perf_counter()
        tokenize_like(size * 16)
        if time.perf_counter() - t0 > 0.05:
            break
        size *= 2
    per_item = max(1, int(size * 16 * serial_s / (time.perf_counter() - t0) / 16))
    items = [per_item] * 16
    serial, pooled = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        [tokenize_like(x) for x in items]
        serial.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        list(parallel_map(tokenize_like, items, workers=workers, chunksize=1))
        pooled.append(time.perf_counter() - t0)
    n = overhead_items
    overhead = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        list(parallel_map(noop, range(n), workers=workers, chunksize=2_000))
        overhead.append((time.perf_counter() - t0) / n)
    return {
        "workers": workers,
        "serial_s": statistics.median(serial),
        "process_s": statistics.median(pooled),
        "speedup": statistics.median(serial) / statistics.median(pooled),
        "overhead_us_per_item_chunk2000": 1e6 * statistics.median(overhead),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=None, help="file size in MB (default 200; --quick: 0.5)")
    ap.add_argument("--repeats", type=int, default=None, help="repeats per reader (default 3; --quick: 1)")
    add_run_options(ap)
    args = ap.parse_args()
    if args.size_mb is None:
        args.size_mb = 0.5 if args.quick else 200.0
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} (shared machine: timings are noisy)")
    results: dict = {"size_mb": args.size_mb, "repeats": args.repeats, "load_average_start": load}
    with tempfile.TemporaryDirectory(prefix="bench-data-") as tmp:
        small = Path(tmp) / "small.jsonl"
        big = Path(tmp) / "big.jsonl"
        base_bytes = int(args.size_mb * MB / 8)
        write_base_file(small, "short", target_bytes=base_bytes, seed=0)
        with open(big, "wb") as out:
            for _ in range(8):
                out.write(small.read_bytes())
        size = big.stat().st_size
        print(
            f"file: {size / MB:.1f} MB of short SFT-style records (8 x a {small.stat().st_size / MB:.1f} MB seeded "
            f"file)\nreaders, median of {args.repeats}:"
        )
        readers = _bench_readers(big, size, args.repeats, tmp)
        results["readers"] = readers
        inproc = _floor_ratio_in_process(big, max(7, args.repeats))
        results["floor_ratio_in_process"] = inproc
        print(
            f"  iter_jsonl / orjson parse floor, interleaved in one process (CPU time, median of "
            f"{inproc['repeats']}): {inproc['ratio']:.3f}",
            flush=True,
        )
        one = _measure(_importable().read_iter_jsonl, str(small), repeats=args.repeats)
        results["flatness"] = {
            "small_mb": small.stat().st_size / MB,
            "big_mb": size / MB,
            "iter_jsonl_small": one,
            "iter_jsonl_big": readers["expkit iter_jsonl"],
        }
        small.unlink()
        big.unlink()
        chat = Path(tmp) / "chat.jsonl"
        write_base_file(chat, "chat", target_bytes=int(args.size_mb * MB), seed=0)
        print(f"chat records (long turns), {chat.stat().st_size / MB:.1f} MB:")
        results["readers_chat"] = _bench_readers(
            chat,
            chat.stat().st_size,
            args.repeats,
            tmp,
            only=("raw line loop", "orjson loop (parse floor)", "expkit iter_jsonl", "stdlib json list"),
        )
    results["parallel_map"] = (
        _bench_pool(args.repeats, serial_s=0.05, overhead_items=4_000) if args.quick else _bench_pool(args.repeats)
    )

    ours, raw, std = (readers[k]["mb_per_s"] for k in ("expkit iter_jsonl", "raw line loop", "stdlib json list"))
    flat_rss = readers["expkit iter_jsonl"]["peak_rss_mb"] / one["peak_rss_mb"]
    pool = results["parallel_map"]
    rc = {name: r["mb_per_s"] for name, r in results["readers_chat"].items()}
    ratios = {
        "iter_jsonl / stdlib json list (throughput)": ours / std,
        "iter_jsonl / raw line loop (throughput)": ours / raw,
        "iter_jsonl / orjson parse floor (throughput)": ours / readers["orjson loop (parse floor)"]["mb_per_s"],
        "chat records: iter_jsonl / stdlib json list": rc["expkit iter_jsonl"] / rc["stdlib json list"],
        "chat records: iter_jsonl / raw line loop": rc["expkit iter_jsonl"] / rc["raw line loop"],
        "iter_jsonl / pandas (throughput)": ours / readers["pandas.read_json(lines=True)"]["mb_per_s"],
        "iter_jsonl / datasets (throughput)": ours / readers["datasets json loader"]["mb_per_s"],
        "stdlib json list peak / file size (memory)": readers["stdlib json list"]["peak_above_baseline_mb"]
        / (size / MB),
        "iter_jsonl peak above baseline (MB)": readers["expkit iter_jsonl"]["peak_above_baseline_mb"],
        "iter_jsonl process peak RSS, 8x / 1x file": flat_rss,
        f"parallel_map speed-up, {pool['workers']} processes, CPU-bound ~0.5 s": pool["speedup"],
        "parallel_map overhead per item, chunksize 2000 (us)": pool["overhead_us_per_item_chunk2000"],
    }
    results["ratios"] = ratios
    results["load_average_end"] = os.getloadavg()[0]
    print("ratios:")
    for k, v in ratios.items():
        print(f"  {k:70s} {v:8.2f}")
    floor = readers["orjson loop (parse floor)"]["mb_per_s"]
    goals = [
        Goal("iter_jsonl / stdlib json list (throughput)", ours / std, 2.0, ">="),
        Goal("iter_jsonl / raw line loop (throughput)", ours / raw, 0.40, ">="),
        Goal("iter_jsonl / orjson parse floor, fresh interpreters (wall)", ours / floor, 0.90, ">="),
        Goal("iter_jsonl / orjson parse floor, in one process", results["floor_ratio_in_process"]["ratio"], 0.90, ">="),
        Goal("iter_jsonl process peak RSS, 8x / 1x file", flat_rss, 1.2, "<="),
        Goal(
            f"parallel_map speed-up, {pool['workers']} processes",
            pool["speedup"],
            1.7 if pool["workers"] >= 2 else 0.8,
            ">=",
        ),
        Goal("parallel_map overhead per item, chunksize 2000 (us)", pool["overhead_us_per_item_chunk2000"], 50.0, "<="),
    ]
    print(f"load average at the end {results['load_average_end']:.1f}")
    return finish(results, goals, args, "data")


if __name__ == "__main__":
    sys.exit(main())
