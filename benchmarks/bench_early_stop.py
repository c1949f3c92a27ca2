"""Seed-aware early stopping against plain (point-metric) ASHA, measured by replays (issue 25 item 1).

The full grid is recorded once: 12 configs (learning rate x hidden width) x 5 seeds of a small real
training, a numpy two-layer MLP fitted by minibatch SGD to a fixed regression set (the char LM at tiny size
is too slow for 60 trials on two shared cores); the seed draws the initial weights and the batch order; the
validation MSE is kept every ``EVAL_EVERY`` steps (the curves). Then each policy is replayed on those curves
with shuffled arrival orders of the 60 trials: how often it picks the full grid's best config (or one the full
grid calls a tie with it: seed-paired t interval including 0), and the steps it ran as a fraction of the grid's.
The seed-aware rows differ in how a config with few seeds is judged (``EarlyStopPolicy``: ``min_pairs``,
``pool_spread``, ``log_scale``); the issue's bar is >= 95% agreement at <= 50% of the compute.

    python benchmarks/bench_early_stop.py --replays 200 [--out DIR]   (writes DIR/early_stop.json)
    python benchmarks/bench_early_stop.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from expkit.sweep.early_stop import (
    EarlyStopPolicy,
    RecordedGrid,
    full_grid_verdict,
    replay_point_asha,
    replay_seed_aware,
)
from timing import add_run_options, write_results  # benchmarks/timing.py

LRS = (0.01, 0.03, 0.1, 0.3)
HIDDEN = (4, 16, 64)
SEEDS = (0, 1, 2, 3, 4)
STEPS = 400
EVAL_EVERY = 25
RUNGS = (50, 100, 200)  # steps; ASHA's geometric rungs with eta = 2 from 50
ETA = 3  # plain ASHA's reduction factor (Li et al. 2018 use 3 or 4)


def regression_set(n: int = 512, d: int = 8) -> tuple[np.ndarray, ...]:
    """A fixed nonlinear regression set (the same for every trial): y = sin(X w1) . w2 + noise."""
    rng = np.random.default_rng(1234)
    x = rng.normal(size=(2 * n, d))
    w1, w2 = rng.normal(scale=0.4, size=(d, 6)), rng.normal(size=6)
    y = np.sin(x @ w1) @ w2 / 2 + 0.1 * rng.normal(size=2 * n)
    return x[:n], y[:n], x[n:], y[n:]


def train_curve(lr: float, hidden: int, seed: int, data: tuple[np.ndarray, ...]) -> list[float]:
    """Validation MSE every EVAL_EVERY steps of one trial (tanh MLP, batch 32, plain SGD)."""
    x, y, xv, yv = data
    rng = np.random.default_rng(seed)
    w1 = rng.normal(scale=1 / np.sqrt(x.shape[1]), size=(x.shape[1], hidden))
    b1 = np.zeros(hidden)
    w2 = rng.normal(scale=1 / np.sqrt(hidden), size=hidden)
    curve = []
    for step in range(1, STEPS + 1):
        idx = rng.integers(0, len(x), size=32)
        # forward
        h = np.tanh(x[idx] @ w1 + b1)  # (B, H)
        err = h @ w2 - y[idx]  # (B,)
        # backward (MSE / 2)
        g_w2 = h.T @ err / len(idx)
        g_h = np.outer(err, w2) * (1 - h**2)  # (B, H)
        g_w1 = x[idx].T @ g_h / len(idx)
        g_b1 = g_h.mean(axis=0)
        # step
        w1 -= lr * g_w1
        b1 -= lr * g_b1
        w2 -= lr * g_w2
        if step % EVAL_EVERY == 0:
            curve.append(float(np.mean((np.tanh(xv @ w1 + b1) @ w2 - yv) ** 2)))
    return curve


def record_grid() -> RecordedGrid:
    data = regression_set()
    configs, curves = [], {}
    for lr in LRS:
        for hidden in HIDDEN:
            name = f"lr={lr:g},h={hidden}"
            configs.append(name)
            for seed in SEEDS:
                curves[(name, seed)] = train_curve(lr, hidden, seed, data)
    steps = tuple(range(EVAL_EVERY, STEPS + 1, EVAL_EVERY))
    return RecordedGrid(tuple(configs), SEEDS, steps, curves)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=200, help="shuffled arrival orders per policy")
    add_run_options(ap)  # --quick (20 replays) and --out DIR, as every benchmark takes them
    args = ap.parse_args()
    n_replays = 20 if args.quick else args.replays

    t0 = time.perf_counter()
    grid = record_grid()
    record_s = time.perf_counter() - t0
    best, ties = full_grid_verdict(grid)
    finals = {c: round(float(grid.final(c).mean()), 5) for c in grid.configs}
    print(
        f"full grid: {len(grid.configs)} configs x {len(grid.seeds)} seeds x {STEPS} steps, "
        f"recorded in {record_s:.1f} s"
    )
    print(f"best {best} (mean final val MSE {finals[best]}); ties with it: {sorted(ties - {best}) or 'none'}")

    rng = np.random.default_rng(0)
    trials = [(c, s) for c in grid.configs for s in grid.seeds]
    rows = {}

    def seed_aware(**fields: object):
        policy = EarlyStopPolicy(rungs=RUNGS, **fields)  # type: ignore[arg-type]
        return lambda o: replay_seed_aware(grid, policy, order=o, ties=ties)

    policies = {
        "seed-aware: paired 95% interval vs leader, >=2 pairs": seed_aware(min_pairs=2),
        "seed-aware: paired, >=3 pairs": seed_aware(min_pairs=3),
        "seed-aware: paired >=3, else pooled seed spread": seed_aware(min_pairs=3, pool_spread=True),
        "seed-aware: paired >=3, else pooled, log(MSE)": seed_aware(min_pairs=3, pool_spread=True, log_scale=True),
        "seed-aware: paired >=2, else pooled, log(MSE)": seed_aware(min_pairs=2, pool_spread=True, log_scale=True),
        f"plain ASHA (point metric, eta={ETA})": lambda o: replay_point_asha(grid, RUNGS, eta=ETA, order=o, ties=ties),
    }
    orders = [[trials[i] for i in rng.permutation(len(trials))] for _ in range(n_replays)]
    for name, replay in policies.items():
        outs = [replay(o) for o in orders]
        agree = float(np.mean([o.agrees for o in outs]))
        frac = np.array([o.compute_fraction for o in outs])
        rows[name] = {
            "agreement": agree,
            "compute_fraction_mean": float(frac.mean()),
            "compute_fraction_p95": float(np.quantile(frac, 0.95)),
            "replays": n_replays,
        }
    print(
        f"\n{n_replays} replays, rungs {list(RUNGS)} of {STEPS} steps; agreement = same best config or a full-grid tie"
    )
    print(f"{'policy':54s} {'agreement':>10s} {'compute':>9s} {'p95':>7s}")
    for name, r in rows.items():
        print(
            f"{name:54s} {100 * r['agreement']:9.1f}% {100 * r['compute_fraction_mean']:8.1f}% "
            f"{100 * r['compute_fraction_p95']:6.1f}%"
        )
    write_results(
        {"grid": {"best": best, "ties": sorted(ties), "final_means": finals, "rungs": RUNGS}, "policies": rows},
        args.out,
        "early_stop",
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
