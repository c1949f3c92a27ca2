"""Benchmark the run store against MLflow, side by side in one run (median of repeats).

- capture: expkit.runs.start() (all seven records) vs mlflow.start_run() + log_params, local SQLite;
  and start() in a git repo with 10,000 changed files;
- run.log() vs mlflow.log_metric() per call, MLflow into a local SQLite store;
- listing 10,000 runs: list_runs() warm and cold (index rebuilt from the directories), and the CLI;
- data fingerprints: the full content hash (blake2b) in MiB/s from the page cache, against sha256 and
  the sampled scheme, which sets FULL_HASH_MAX_BYTES in expkit/runs/fingerprint.py.

The machine is shared with other jobs: ratios are medians, not guarantees.
Usage: .venv/bin/python benchmarks/bench_runs.py [--quick] [--check] [--out DIR] [--only hash]
(``--quick``: tiny sizes, one repeat, seconds: CI checks that every peer still runs; the figures mean nothing)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import torch  # noqa: F401  - a training script has torch imported before start()

from timing import Goal, add_run_options, finish, median_cpu_s, median_wall_s, write_results  # benchmarks/timing.py


def bench_capture(tmp: Path, repeats: int) -> dict:
    import mlflow

    from expkit.runs import start
    from expkit.runs.codecache import forget_kept_records

    store = tmp / "store"
    cfg = {"lr": 3e-4, "batch_size": 32, "model": {"layers": 4, "width": 128}}

    def ours() -> None:
        forget_kept_records()  # what a training script's one start() pays, not the per-process code-record cache
        with start(config=cfg, data=[__file__], seed=0, store=store):
            pass

    mlflow.set_tracking_uri(f"sqlite:///{tmp / 'mlflow.db'}")
    mlflow.set_experiment("bench")

    def theirs() -> None:
        with mlflow.start_run():
            mlflow.log_params({"lr": 3e-4, "batch_size": 32, "model.layers": 4, "model.width": 128})

    theirs()  # the first call creates the database (schema migrations); not counted
    ours()
    return {
        "expkit_start_s": median_wall_s(ours, repeats),
        "mlflow_start_run_s": median_wall_s(theirs, repeats),
        "expkit_start_cpu_s": median_cpu_s(ours, repeats),
    }


def bench_capture_big_repo(tmp: Path, n_files: int, repeats: int) -> dict:
    from expkit.runs import Capture, start
    from expkit.runs.codecache import forget_kept_records

    repo = tmp / "bigrepo"
    (repo / "src").mkdir(parents=True)
    for i in range(n_files):
        (repo / "src" / f"m{i}.py").write_text(f"x = {i}\n")
    git = ["git", "-c", "user.email=b@b", "-c", "user.name=b", "-c", "gc.auto=0"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    subprocess.run([*git, "gc", "-q"], cwd=repo, check=True)  # packed objects, as in any cloned repo
    for i in range(n_files):  # every file changed, uncommitted
        (repo / "src" / f"m{i}.py").write_text(f"x = {i + 1}\n")
    store = tmp / "bigstore"
    ids = []

    def ours() -> None:
        forget_kept_records()  # each repeat captures the 10,000 changed files again, as a new process would
        with start(seed=0, store=store, capture=Capture(code_dir=repo)) as run:
            ids.append(run.id)

    s = median_wall_s(ours, repeats)
    cpu = median_cpu_s(ours, repeats)
    rec = orjson.loads((store / ids[-1] / "run.json").read_bytes())
    return {
        "changed_files": rec["code"]["changed_files"],
        "patch_bytes": rec["code"]["patch_bytes"],
        "expkit_start_big_repo_s": s,
        "expkit_start_big_repo_cpu_s": cpu,
        "capture_s_recorded": rec["capture_s"],
    }


def bench_log(tmp: Path, n_ours: int, n_theirs: int) -> dict:
    import mlflow

    from expkit.runs import start

    with start(seed=0, store=tmp / "logstore") as run:
        t0 = time.perf_counter()
        for i in range(n_ours):
            run.log(i, loss=1.0 / (i + 1), lr=3e-4)
        ours = (time.perf_counter() - t0) / n_ours
    with open(run.dir / "metrics.jsonl", "rb") as f:
        lines = sum(1 for _ in f)
    mlflow.set_tracking_uri(f"sqlite:///{tmp / 'mlflow.db'}")
    mlflow.set_experiment("bench")
    with mlflow.start_run():
        t0 = time.perf_counter()
        for i in range(n_theirs):
            mlflow.log_metric("loss", 1.0 / (i + 1), step=i)
        theirs = (time.perf_counter() - t0) / n_theirs
    return {
        "expkit_log_us": ours * 1e6,
        "mlflow_log_metric_us": theirs * 1e6,
        "ratio": theirs / ours,
        "expkit_lines_written": lines,
        "expkit_calls": n_ours,
        "mlflow_calls": n_theirs,
    }


def bench_ls(tmp: Path, n_runs: int, repeats: int) -> dict:
    from expkit.runs import start
    from expkit.runs.store import list_runs

    store = tmp / "lsstore"
    with start(config={"lr": 0.1}, seed=0, store=store) as run:
        run.log(1, loss=0.5)
    template = orjson.loads((run.dir / "run.json").read_bytes())
    for i in range(n_runs - 1):
        rid = f"20250101-000000-{i:06x}"
        (store / rid).mkdir()
        rec = dict(template, id=rid, name=f"r{i}", config={"lr": i / n_runs}, final_metrics={"loss": i / n_runs})
        (store / rid / "run.json").write_bytes(orjson.dumps(rec))
    t0 = time.perf_counter()
    cold = list_runs(store)
    cold_s = time.perf_counter() - t0
    assert len(cold.runs) == n_runs, len(cold.runs)
    warm_s = median_wall_s(lambda: list_runs(store), repeats)
    where_s = median_wall_s(lambda: list_runs(store, where=["config.lr<0.5", "status=finished"]), repeats)
    expkit = Path(sys.executable).with_name("expkit")
    env = dict(os.environ, EXPKIT_STORE=str(store))
    cli_s = median_wall_s(
        lambda: subprocess.run(
            [str(expkit), "runs", "ls", "--limit", "0", "--json"], env=env, capture_output=True, check=True
        ),
        max(1, repeats // 2),
    )
    cli_head_s = median_wall_s(
        lambda: subprocess.run([str(expkit), "runs", "ls"], env=env, capture_output=True, check=True),
        max(1, repeats // 2),
    )
    return {
        "runs": n_runs,
        "list_runs_cold_s": cold_s,
        "list_runs_warm_s": warm_s,
        "list_runs_where_s": where_s,
        "cli_ls_all_json_s": cli_s,
        "cli_ls_default_table_s": cli_head_s,
    }


def bench_hash(tmp: Path, size_mb: int, repeats: int) -> dict:
    import hashlib

    from expkit.runs.fingerprint import FULL_HASH_MAX_BYTES, fingerprint_input

    path = tmp / "data.bin"
    with open(path, "wb") as f:
        for _ in range(size_mb):
            f.write(os.urandom(1 << 20))
    path.read_bytes()  # into the page cache: the data a run is about to read is usually there too

    def sha256() -> None:
        with open(path, "rb") as f:
            hashlib.file_digest(f, "sha256")

    full = median_wall_s(lambda: fingerprint_input(path, scheme="full"), repeats)
    sampled = median_wall_s(lambda: fingerprint_input(path, scheme="sampled+mtime"), repeats)
    sha = median_wall_s(sha256, repeats)
    mib_s = size_mb / full
    return {
        "file_mib": size_mb,
        "expkit_full_blake2b_mib_s": mib_s,
        "sha256_file_digest_mib_s": size_mb / sha,
        "expkit_sampled_s": sampled,
        "full_hash_max_bytes": FULL_HASH_MAX_BYTES,
        "full_hash_at_threshold_s": FULL_HASH_MAX_BYTES / 2**20 / mib_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    parser.add_argument("--only", choices=("hash",), help="run one part only")
    args = parser.parse_args()
    reps = 1 if args.quick else 7
    tmp = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    cwd = os.getcwd()
    os.chdir(Path(__file__).resolve().parents[1])  # capture the expkit checkout's git state
    try:
        res = {"machine": "2 shared cores; other jobs running: ratios are noisy", "quick": args.quick}
        res["hash"] = bench_hash(tmp, 8 if args.quick else 512, reps)
        h = res["hash"]
        print(
            f"fingerprint of a {h['file_mib']} MiB file: full blake2b {h['expkit_full_blake2b_mib_s']:.0f} MiB/s "
            f"(sha256 {h['sha256_file_digest_mib_s']:.0f} MiB/s), "
            f"sampled+mtime {h['expkit_sampled_s'] * 1e3:.1f} ms; "
            f"a full hash at the {h['full_hash_max_bytes'] / 2**30:.0f} GiB threshold costs "
            f"{h['full_hash_at_threshold_s']:.1f} s",
            flush=True,
        )
        if args.only == "hash":
            write_results(res, args.out, "runs-hash", quick=args.quick)
            return 0
        res["capture"] = bench_capture(tmp, reps)
        print(
            f"capture: expkit start() {res['capture']['expkit_start_s']:.3f} s wall, "
            f"{res['capture']['expkit_start_cpu_s']:.3f} s CPU (bound 0.5 s) | "
            f"mlflow start_run+log_params {res['capture']['mlflow_start_run_s']:.3f} s",
            flush=True,
        )
        res["capture_big_repo"] = bench_capture_big_repo(tmp, 100 if args.quick else 10_000, max(1, reps // 2))
        b = res["capture_big_repo"]
        print(
            f"capture, {b['changed_files']} changed files: {b['expkit_start_big_repo_s']:.3f} s wall, "
            f"{b['expkit_start_big_repo_cpu_s']:.3f} s CPU incl. git (bound 1 s), "
            f"patch {b['patch_bytes']} bytes",
            flush=True,
        )
        res["log"] = bench_log(tmp, 2_000 if args.quick else 200_000, 30 if args.quick else 1_000)
        lg = res["log"]
        print(
            f"log: expkit run.log {lg['expkit_log_us']:.2f} us/call | mlflow.log_metric (sqlite) "
            f"{lg['mlflow_log_metric_us']:.0f} us/call | ratio {lg['ratio']:.0f}x (bound >= 50x)",
            flush=True,
        )
        res["ls"] = bench_ls(tmp, 200 if args.quick else 10_000, reps)
        ls = res["ls"]
        print(
            f"ls over {ls['runs']} runs: list_runs warm {ls['list_runs_warm_s']:.3f} s (bound 0.5 s), "
            f"with --where {ls['list_runs_where_s']:.3f} s, cold index build {ls['list_runs_cold_s']:.2f} s; "
            f"CLI `runs ls --limit 0 --json` {ls['cli_ls_all_json_s']:.2f} s, "
            f"`runs ls` {ls['cli_ls_default_table_s']:.2f} s "
            "(CLI times include interpreter start)",
            flush=True,
        )
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
    goals = [
        Goal("expkit start() CPU (s)", res["capture"]["expkit_start_cpu_s"], 0.5, "<="),
        Goal("start() CPU with changed files, incl. git (s)", b["expkit_start_big_repo_cpu_s"], 1.0, "<="),
        Goal("mlflow.log_metric / run.log per call", lg["ratio"], 50.0, ">="),
        Goal(f"list_runs warm over {ls['runs']} runs (s)", ls["list_runs_warm_s"], 0.5, "<="),
    ]
    return finish(res, goals, args, "runs")


if __name__ == "__main__":
    sys.exit(main())
