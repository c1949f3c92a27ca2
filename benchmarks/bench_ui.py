"""Benchmark ``expkit ui`` on big stores, side by side with what it is built on (median of repeats, real HTTP
to a uvicorn server on loopback):

- the runs page of a 10,000-run store: ``GET /api/runs`` (one page of 50, sorted by a config key) and the
  HTML shell ``GET /runs``, against ``list_runs()`` alone (what ``expkit runs ls`` reads); goal <= 1 s;
- a curve of 1,000,000 points: the first ``GET /api/run/ID/series`` (reads and parses metrics.jsonl), then a
  warm one (the cache holds the points; what a live page's poll costs), against sending every point as JSON;
  the decimation kernel (tsdownsample's MinMaxDownsampler) against a plain numpy reshape min-max; goal: the
  warm request and the decimation <= 0.3 s.

The machine is shared with other jobs: ratios are medians, not guarantees.
Usage: .venv/bin/python benchmarks/bench_ui.py [--quick] [--check] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import orjson

from timing import Goal, add_run_options, finish, median_wall_s  # benchmarks/timing.py

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ui"))
from uiserver import serve_in_thread  # the tests' in-thread uvicorn: one way to start it

from expkit.ui import UiConfig


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def make_store(store: Path, n_runs: int) -> None:
    """``n_runs`` runs of one group, each with a nested config (a Trainer-like dict) that differs in two keys."""
    from expkit.runs import start

    with start(config={"lr": 0.1}, seed=0, store=store) as run:
        run.log(1, loss=0.5)
    template = orjson.loads((run.dir / "run.json").read_bytes())
    for i in range(n_runs - 1):
        rid = f"20250101-000000-{i:06x}"
        (store / rid).mkdir()
        cfg = {"lr": i / n_runs, "training_args": {"learning_rate": i / n_runs, "seed": i % 5, "bs": 8, "warmup": 10}}
        rec = dict(template, id=rid, name=f"r{i}", group="big", config=cfg, final_metrics={"loss": i / n_runs})
        (store / rid / "run.json").write_bytes(orjson.dumps(rec))


def bench_runs_page(tmp: Path, n_runs: int, repeats: int) -> dict:
    from expkit.runs.store import list_runs

    store = tmp / "big"
    make_store(store, n_runs)
    list_runs(store)  # builds the index once, as the first `runs ls` would
    served = serve_in_thread(UiConfig(store=store))
    srv = next(served)
    try:
        api = f"{srv.url}/api/runs?sort=config.training_args.learning_rate&desc=1&limit=50"
        page = json.loads(_get(api))
        assert page["total"] == n_runs and len(page["rows"]) == 50, page["total"]
        api_s = median_wall_s(lambda: _get(api), repeats)
        html_s = median_wall_s(lambda: _get(srv.url + "/runs"), repeats)
    finally:
        for _ in served:
            pass
    ls_s = median_wall_s(lambda: list_runs(store), repeats)
    return {"runs": n_runs, "api_runs_page_s": api_s, "html_shell_s": html_s, "list_runs_s": ls_s}


def _numpy_minmax(y: np.ndarray, buckets: int) -> np.ndarray:
    """The hand-written alternative: pad to buckets x per, argmin/argmax per row."""
    per = -(-y.size // buckets)
    grid = np.concatenate([y, np.full(per * buckets - y.size, np.nan)]).reshape(buckets, per)
    base = np.arange(buckets) * per
    return np.unique(np.concatenate([base + np.nanargmin(grid, axis=1), base + np.nanargmax(grid, axis=1)]))


def bench_curve(tmp: Path, n_points: int, repeats: int) -> dict:
    from expkit.ui.downsample import decimate_minmax

    run_dir = tmp / "big" / "20250101-000000-000000"
    rng = np.random.default_rng(0)
    y = 2.0 / np.sqrt(np.arange(1, n_points + 1)) + 0.01 * rng.standard_normal(n_points)
    with (run_dir / "metrics.jsonl").open("wb") as f:
        f.writelines(orjson.dumps({"step": i + 1, "loss": float(v)}) + b"\n" for i, v in enumerate(y))
    served = serve_in_thread(UiConfig(store=tmp / "big"))
    srv = next(served)
    try:
        url = f"{srv.url}/api/run/{run_dir.name}/series?metric=loss"
        t0, c0 = time.perf_counter(), time.process_time()  # the server is a thread of this process
        first = json.loads(_get(url))
        first_s, first_cpu_s = time.perf_counter() - t0, time.process_time() - c0
        assert first["n_points"] == n_points, first["n_points"]
        warm_s = median_wall_s(lambda: _get(url), repeats)
        body = len(_get(url))
    finally:
        for _ in served:
            pass
    x = np.arange(n_points, dtype=float)
    kernel_s = median_wall_s(lambda: decimate_minmax(x, y, buckets=1000), repeats)
    numpy_s = median_wall_s(lambda: _numpy_minmax(y, 1000), repeats)
    all_points_s = median_wall_s(lambda: orjson.dumps({"x": x.tolist(), "y": y.tolist()}), repeats)
    all_bytes = len(orjson.dumps({"x": x.tolist(), "y": y.tolist()}))
    return {
        "points": n_points,
        "first_request_s": first_s,
        "first_request_cpu_s": first_cpu_s,
        "warm_request_s": warm_s,
        "response_bytes": body,
        "points_drawn": first["n_shown"],
        "decimate_tsdownsample_s": kernel_s,
        "decimate_numpy_reshape_s": numpy_s,
        "every_point_as_json_s": all_points_s,
        "every_point_json_bytes": all_bytes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(parser)
    args = parser.parse_args()
    n_runs, n_points, reps = (300, 20_000, 1) if args.quick else (10_000, 1_000_000, 5)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        runs = bench_runs_page(tmp, n_runs, reps)
        print(
            f"runs page, {runs['runs']:,} runs: api {runs['api_runs_page_s']:.3f} s, html {runs['html_shell_s']:.3f} s;"
            f" list_runs alone {runs['list_runs_s']:.3f} s (page / list_runs = "
            f"{runs['api_runs_page_s'] / runs['list_runs_s']:.2f}x)"
        )
        curve = bench_curve(tmp, n_points, reps)
    print(
        f"curve, {curve['points']:,} points -> {curve['points_drawn']} drawn: first request "
        f"{curve['first_request_s']:.3f} s ({curve['first_request_cpu_s']:.3f} s CPU; parses the file), "
        f"warm {curve['warm_request_s']:.3f} s "
        f"({curve['response_bytes']:,} bytes vs "
        f"{curve['every_point_json_bytes']:,} for every point, which takes {curve['every_point_as_json_s']:.3f} s to"
        f" encode); decimation: tsdownsample {curve['decimate_tsdownsample_s'] * 1e3:.1f} ms, numpy reshape "
        f"{curve['decimate_numpy_reshape_s'] * 1e3:.1f} ms "
        f"({curve['decimate_numpy_reshape_s'] / curve['decimate_tsdownsample_s']:.0f}x)"
    )
    goals = [
        Goal(f"runs page API at {n_runs:,} runs (s)", runs["api_runs_page_s"], 1.0, "<="),
        Goal(f"runs page HTML at {n_runs:,} runs (s)", runs["html_shell_s"], 1.0, "<="),
        Goal(f"warm curve request at {n_points:,} points (s)", curve["warm_request_s"], 0.3, "<="),
        Goal(f"decimation of {n_points:,} points (s)", curve["decimate_tsdownsample_s"], 0.3, "<="),
        Goal("points drawn <= 2 per bucket (1,000 buckets)", curve["points_drawn"], 2000, "<=", quick=True),
    ]
    return finish({"runs_page": runs, "curve": curve}, goals, args, "ui")


if __name__ == "__main__":
    sys.exit(main())
