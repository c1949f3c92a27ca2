"""Benchmark expkit.stats beside its peers, in one run, median of repeats; not a test.

1. Paired bootstrap, B = 10,000 resamples over 10,000 items (target <= 1 s): expkit.stats.paired_bootstrap
   vs scipy.stats.bootstrap(vectorized=True), for 0/1 scores and for graded (continuous) scores.
2. Eval table, 20 models x 10,000 items from a JSONL file (target <= 5 s): expkit (read + Wilson + McNemar +
   Agresti-Min + Holm) vs the same with pandas + statsmodels.

Run: .venv/bin/python benchmarks/bench_stats.py [--quick] [--out DIR]   (writes benchmarks/results/stats.json;
``--quick``: 500 items, 500 resamples, 3 models, one repeat, for CI: stats.quick.json)
The machine may be shared with other jobs: ratios are medians of repeats, absolute times are indicative.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from timing import add_run_options, median_wall_s, write_results  # benchmarks/timing.py

N_ITEMS = 10_000
N_BOOT = 10_000
N_MODELS = 20


def bench_bootstrap(repeats: int) -> dict:
    from scipy import stats

    from expkit.stats.paired import paired_bootstrap

    rng = np.random.default_rng(0)
    out = {}
    cases = {
        "binary": ((rng.random(N_ITEMS) < 0.72).astype(float), (rng.random(N_ITEMS) < 0.70).astype(float)),
        "graded": (rng.random(N_ITEMS), rng.random(N_ITEMS)),
    }
    for name, (a, b) in cases.items():
        # default arguments bind this iteration's arrays (B023)
        ours = median_wall_s(lambda a=a, b=b: paired_bootstrap(a, b, n_boot=N_BOOT, seed=1), repeats)
        d = a - b
        peer = median_wall_s(
            lambda d=d: stats.bootstrap(
                (d,), np.mean, n_resamples=N_BOOT, method="percentile", vectorized=True, random_state=1
            ),
            repeats,
        )
        r_ours = paired_bootstrap(a, b, n_boot=N_BOOT, seed=1)
        r_peer = stats.bootstrap(
            (d,), np.mean, n_resamples=N_BOOT, method="percentile", vectorized=True, random_state=1
        ).confidence_interval
        out[name] = {
            "expkit_s": ours,
            "scipy_s": peer,
            "speedup_vs_scipy": peer / ours,
            "expkit_ci": [r_ours.low, r_ours.high],
            "scipy_ci": [float(r_peer.low), float(r_peer.high)],
            "target_s": 1.0,
            "within_target": ours <= 1.0,
        }
    return out


def _write_results(path: Path) -> None:
    import orjson

    rng = np.random.default_rng(0)
    difficulty = rng.normal(0, 1.5, N_ITEMS)
    with path.open("wb") as fh:
        for m in range(N_MODELS):
            p = 1 / (1 + np.exp(difficulty - (0.8 + 0.02 * m)))
            scores = (rng.random(N_ITEMS) < p).astype(int)
            fh.write(
                b"".join(
                    orjson.dumps({"model": f"m{m:02d}", "item": f"q{i}", "score": int(s)}) + b"\n"
                    for i, s in enumerate(scores)
                )
            )


def _peer_table(path: Path) -> None:
    import pandas as pd
    from statsmodels.stats.contingency_tables import mcnemar
    from statsmodels.stats.multitest import multipletests
    from statsmodels.stats.proportion import proportion_confint

    df = pd.read_json(path, lines=True)
    if df.duplicated(["model", "item"]).any():
        raise ValueError("duplicates")
    wide = df.pivot(index="item", columns="model", values="score")
    base = wide.columns[0]
    for m in wide.columns:
        proportion_confint(int(wide[m].sum()), len(wide), method="wilson")
    ps = []
    for m in wide.columns[1:]:
        a, b = wide[m].to_numpy(), wide[base].to_numpy()
        table = [
            [int(((a == 1) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())],
            [int(((a == 0) & (b == 1)).sum()), int(((a == 0) & (b == 0)).sum())],
        ]
        ps.append(mcnemar(table, exact=table[0][1] + table[1][0] <= 25).pvalue)
    multipletests(ps, method="holm")


def bench_table(repeats: int) -> dict:
    from expkit.stats.tables import build_eval_table, read_item_results

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.jsonl"
        _write_results(path)
        ours = median_wall_s(lambda: build_eval_table(read_item_results(path)), repeats)
        peer = median_wall_s(lambda: _peer_table(path), repeats)
    return {
        "expkit_s": ours,
        "pandas_statsmodels_s": peer,
        "ratio_peer_over_expkit": peer / ours,
        "target_s": 5.0,
        "within_target": ours <= 5.0,
        "rows": N_MODELS * N_ITEMS,
    }


def main() -> None:
    global N_ITEMS, N_BOOT, N_MODELS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser)
    args = parser.parse_args()
    repeats = int(os.environ.get("BENCH_REPEATS", "1" if args.quick else "5"))
    if args.quick:  # sizes for CI: every code path and peer runs, in about a second
        N_ITEMS, N_BOOT, N_MODELS = 500, 500, 3
    boot = bench_bootstrap(repeats)
    table = bench_table(1 if args.quick else max(3, repeats // 2))
    result = {
        "n_items": N_ITEMS,
        "n_boot": N_BOOT,
        "repeats": repeats,
        "cpu_count": os.cpu_count(),
        "note": "machine shared with other jobs; medians of repeats",
        "bootstrap": boot,
        "table": table,
    }
    for name, r in boot.items():
        print(
            f"paired bootstrap ({name}), B={N_BOOT:,} x n={N_ITEMS:,}: expkit {r['expkit_s']:.3f} s, "
            f"scipy.stats.bootstrap {r['scipy_s']:.3f} s -> {r['speedup_vs_scipy']:.1f}x "
            f"(target <= 1 s: {'met' if r['within_target'] else 'MISSED'})"
        )
    print(
        f"eval table {N_MODELS} models x {N_ITEMS:,} items: expkit {table['expkit_s']:.2f} s, pandas+statsmodels "
        f"{table['pandas_statsmodels_s']:.2f} s -> {table['ratio_peer_over_expkit']:.2f}x "
        f"(target <= 5 s: {'met' if table['within_target'] else 'MISSED'})"
    )
    write_results(result, args.out, "stats", quick=args.quick)


if __name__ == "__main__":
    main()
