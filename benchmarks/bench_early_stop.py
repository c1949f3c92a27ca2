"""Seed-aware early stopping against plain (point-metric) ASHA, measured by replays (issue 25 item 1).

A full grid is recorded once, then each policy is replayed on its curves with shuffled arrival orders of the
trials: how often it picks the full grid's best config (or one the full grid calls a tie with it: seed-paired
t interval including 0), and the steps it ran as a fraction of the grid's. Two grids of 12 configs x 5 seeds:

- ``charlm``: expkit's char LM (1 layer, width 16/32/64 x peak learning rate 1e-3..3e-2, 400 AdamW steps on
  the Python standard library's sources, validation loss every 25 steps), trained through ``train_charlm``;
  the seed draws the initial weights and the batch order. Recording it takes ~4-8 min on 2 cores, so the
  curves are kept in ``benchmarks/recordings/early_stop_charlm.json`` with what made them; the file is used
  while its spec matches this script's, and ``--record`` trains the grid again.
- ``mlp``: a numpy two-layer MLP fitted by minibatch SGD to a fixed regression set (recorded in seconds).

The seed-aware rows differ in how a config with few seeds is judged (``EarlyStopPolicy``: ``min_pairs``,
``few_pairs``, ``min_pooled_df``, ``log_scale``); the issue's bar is >= 95% agreement at
<= 50% of the compute. The oracle rows are bounds, not rules (``replay_oracle``): the least compute a rule
that needs k seed pairs at a rung (with any config, or with the final best) could reach keeping the verdict.
The rungs are the same for every policy and both grids (50, 100, 200 of 400 steps); a second set with an
earlier first rung (25) shows how the verdicts depend on it (curves that cross after step 25 are stopped too
early).
Trials run one at a time, then 12 and 60 at a time (``workers``: every running trial advances at the same
speed; on a cluster the seeds of a config reach a rung together, so the paired rule has its pairs sooner),
and 5 at a time in the order ``expkit sweep`` starts a plan (a config's seeds in a row, configs shuffled).

    python benchmarks/bench_early_stop.py --replays 200 [--grid charlm|mlp|both] [--record] [--out DIR]
    python benchmarks/bench_early_stop.py --quick   (20 replays; the char LM grid only from its recording)
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from expkit.sweep.early_stop import (
    EarlyStopPolicy,
    RecordedGrid,
    ReplayOutcome,
    _pick,
    _simulate,
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
EARLY_RUNGS = (25, 50, 100, 200)  # the same with an earlier first rung
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


CHARLM_LRS = (1e-3, 3e-3, 1e-2, 3e-2)
CHARLM_WIDTHS = (16, 32, 64)
CHARLM_SPEC = {
    "model": {"n_layer": 1, "n_head": 2, "block_size": 64},
    "train": {"batch_size": 16, "seq_len": 64, "warmup_steps": 10, "eval_windows": 32, "lr_min": "lr_max / 10"},
    "lrs": list(CHARLM_LRS),
    "widths": list(CHARLM_WIDTHS),
    "seeds": list(SEEDS),
    "steps": STEPS,
    "eval_every": EVAL_EVERY,
}
RECORDING = Path(__file__).parent / "recordings" / "early_stop_charlm.json"


def charlm_curve(job: tuple[float, int, int]) -> list[float]:
    """Validation loss every EVAL_EVERY steps of one char LM trial (one thread: two trials share 2 cores)."""
    import torch

    from expkit.train import train_charlm
    from expkit.train.config import TrainConfig, TrainRequest
    from expkit.train.model import CharLMConfig

    lr, width, seed = job
    torch.set_num_threads(1)
    model = CharLMConfig(n_embd=width, **CHARLM_SPEC["model"])
    train = TrainConfig(
        max_steps=STEPS, eval_interval=EVAL_EVERY, lr_max=lr, lr_min=lr / 10, num_threads=1, log_interval=10**6,
        **{k: v for k, v in CHARLM_SPEC["train"].items() if k != "lr_min"},
    )  # fmt: skip
    res = train_charlm(TrainRequest(model_config=model, train_config=train, seed=seed, record=False))
    return [v for step, v in res.val_losses if step > 0]


def record_charlm(path: Path) -> dict:
    """Train the 60 char LM trials, two at a time, and keep their curves (with the spec) in ``path``."""
    import torch

    jobs = [(lr, w, s) for lr in CHARLM_LRS for w in CHARLM_WIDTHS for s in SEEDS]
    t0 = time.perf_counter()
    curves = {}
    with ProcessPoolExecutor(2) as pool:
        for i, (job, curve) in enumerate(zip(jobs, pool.map(charlm_curve, jobs), strict=True), 1):
            curves[f"lr={job[0]:g},d={job[1]}|{job[2]}"] = curve
            print(
                f"  recorded {i}/{len(jobs)}: lr={job[0]:g} d={job[1]} seed {job[2]}: final {curve[-1]:.4f}", flush=True
            )
    rec = {
        "spec": CHARLM_SPEC,
        "made_by": "benchmarks/bench_early_stop.py --record",
        "torch": torch.__version__,
        "machine": platform.platform(),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(time.perf_counter() - t0, 1),
        "curves": curves,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=1))
    return rec


def charlm_grid(*, record: bool, quick: bool) -> RecordedGrid | None:
    """The char LM grid from its recording (trained again with ``record`` or when the spec changed);
    None under ``quick`` when there is no usable recording."""
    rec = json.loads(RECORDING.read_text()) if RECORDING.exists() else None
    if record or rec is None or rec.get("spec") != CHARLM_SPEC:
        if quick:
            return None
        print(f"recording the char LM grid (60 trials, two at a time) into {RECORDING} ...")
        rec = record_charlm(RECORDING)
    print(f"char LM grid: recorded {rec['recorded_at']} in {rec['seconds']} s (torch {rec['torch']})")
    curves = {(k.split("|")[0], int(k.split("|")[1])): v for k, v in rec["curves"].items()}
    configs = tuple(dict.fromkeys(c for c, _ in curves))
    return RecordedGrid(configs, SEEDS, tuple(range(EVAL_EVERY, STEPS + 1, EVAL_EVERY)), curves)


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


def shuffled_orders(grid: RecordedGrid, n_replays: int, *, config_major: bool) -> list[list[tuple[str, int]]]:
    """``n_replays`` arrival orders: every trial shuffled, or (``config_major``, the order ``expkit sweep``
    starts a plan's trials in) the configs shuffled with each config's seeds in a row."""
    rng = np.random.default_rng(0)
    if config_major:
        return [
            [(grid.configs[i], s) for i in rng.permutation(len(grid.configs)) for s in grid.seeds]
            for _ in range(n_replays)
        ]
    trials = [(c, s) for c in grid.configs for s in grid.seeds]
    return [[trials[i] for i in rng.permutation(len(trials))] for _ in range(n_replays)]


def replay_oracle(
    grid: RecordedGrid,
    rungs: tuple[int, ...],
    *,
    k: int,
    partner: str | None,
    order: list[tuple[str, int]],
    ties: frozenset[str],
    workers: int = 1,
) -> ReplayOutcome:
    """The least compute a rule that needs ``k`` seed pairs with the leader could reach while keeping the full
    grid's verdict (a bound, not a rule): it knows the verdict and stops every config outside the full grid's
    tie set at the first moment it has ``k`` seeds paired at a rung (its seed s and the partner's seed s both
    there, whichever of the two values arrives last) with ``partner`` (the final best config), or with any
    other config when ``partner`` is None (a rule's leader may be any config: only that is a lower bound for
    every order); ``k = 0``: at its first seed's first rung, no pair needed. The tie set runs every seed, so
    the pick is the full grid's best."""
    seen: dict[tuple[str, int], set[int]] = {}
    stopped: set[str] = set()

    def judged(config: str, step: int) -> bool:
        mine = seen.get((config, step), set())
        if not mine or config in ties or config in stopped:
            return False
        others = [partner] if partner is not None else [c for c in grid.configs if c != config]
        return any(len(mine & seen.get((c, step), set())) >= k for c in others if c != config)

    def at_rung(config: str, seed: int, step: int) -> bool:
        seen.setdefault((config, step), set()).add(seed)
        # the arriving config, and every config that gains a pair from this value
        stopped.update(c for c in grid.configs if (c == config or k > 0) and judged(c, step))
        return config in stopped

    fraction, finals = _simulate(grid, order, rungs, workers, at_rung=at_rung, dropped=lambda c: c in stopped)
    picked = _pick(grid, {c: v for c, v in finals.items() if c not in stopped})
    return ReplayOutcome(picked, picked in ties, fraction, tuple(sorted(stopped)))


def replay_policies(
    grid: RecordedGrid, rungs: tuple[int, ...], workers: int, n_replays: int, *, config_major: bool = False
) -> dict[str, dict]:
    """Each policy on the same ``n_replays`` arrival orders of the grid's trials, ``workers`` at a time."""
    best, ties = full_grid_verdict(grid)
    orders = shuffled_orders(grid, n_replays, config_major=config_major)

    pp = "pooled-pairs"

    def seed_aware(**fields: object):
        policy = EarlyStopPolicy(rungs=rungs, **fields)  # type: ignore[arg-type]
        return lambda o: replay_seed_aware(grid, policy, order=o, ties=ties, workers=workers)

    policies = {
        "seed-aware: paired 95% interval vs leader, >=2 pairs": seed_aware(min_pairs=2, few_pairs="wait"),
        "seed-aware: paired, >=3 pairs": seed_aware(min_pairs=3, few_pairs="wait"),
        "seed-aware: paired >=3, else pooled seed spread": seed_aware(min_pairs=3, few_pairs="pooled-spread"),
        "seed-aware: paired >=3, else pooled, log": seed_aware(min_pairs=3, few_pairs="pooled-spread", log_scale=True),
        "seed-aware: paired >=2, else pooled, log": seed_aware(min_pairs=2, few_pairs="pooled-spread", log_scale=True),
        "seed-aware: paired >=3, else paired-pooled (df>=4; the default)": seed_aware(
            min_pairs=3, few_pairs="pooled-pairs"
        ),
        "seed-aware: paired >=3, else paired-pooled, log": seed_aware(min_pairs=3, few_pairs=pp, log_scale=True),
        "seed-aware: paired >=2, else paired-pooled, log": seed_aware(min_pairs=2, few_pairs=pp, log_scale=True),
        "seed-aware: paired >=3, else paired-pooled, df>=2": seed_aware(min_pairs=3, few_pairs=pp, min_pooled_df=2),
        "seed-aware: paired-rcbd (config+seed fit, df>=4; else >=3)": seed_aware(min_pairs=3, few_pairs="rcbd"),
        "seed-aware: paired-rcbd, log": seed_aware(min_pairs=3, few_pairs="rcbd", log_scale=True),
        f"plain ASHA (point metric, eta={ETA})": lambda o: replay_point_asha(
            grid, rungs, eta=ETA, order=o, ties=ties, workers=workers
        ),
        "oracle bound, no pair needed": lambda o: replay_oracle(
            grid, rungs, k=0, partner=None, order=o, ties=ties, workers=workers
        ),
        **{
            f"oracle bound, >={k} pair{'s' * (k > 1)} with {'any config' if p is None else 'the final best'}": (
                lambda o, k=k, p=p: replay_oracle(grid, rungs, k=k, partner=p, order=o, ties=ties, workers=workers)
            )
            for p in (None, best)
            for k in (1, 2, 3)
        },
    }
    rows = {}
    for name, replay in policies.items():
        outs = [replay(o) for o in orders]
        frac = np.array([o.compute_fraction for o in outs])
        rows[name] = {
            "agreement": float(np.mean([o.agrees for o in outs])),
            "compute_fraction_mean": float(frac.mean()),
            "compute_fraction_p95": float(np.quantile(frac, 0.95)),
            "replays": n_replays,
        }
    return rows


def report_grid(name: str, grid: RecordedGrid, n_replays: int) -> dict:
    best, ties = full_grid_verdict(grid)
    finals = {c: round(float(grid.final(c).mean()), 5) for c in grid.configs}
    print(f"\n== {name}: {len(grid.configs)} configs x {len(grid.seeds)} seeds x {grid.steps[-1]} steps")
    print(f"best {best} (mean final {finals[best]}); ties with it: {sorted(ties - {best}) or 'none'}")
    out: dict = {"best": best, "ties": sorted(ties), "final_means": finals, "rungs": {}}
    setups = [(RUNGS, 1, False), (EARLY_RUNGS, 1, False), (RUNGS, 12, False), (RUNGS, 60, False), (RUNGS, 5, True)]
    for rungs, workers, config_major in setups:
        rows = replay_policies(grid, rungs, workers, n_replays, config_major=config_major)
        order = "a config's seeds in a row (expkit sweep's order)" if config_major else "every trial shuffled"
        out["rungs"][f"{','.join(map(str, rungs))} workers={workers} order={'config' if config_major else 'trial'}"] = (
            rows
        )
        print(
            f"\n{n_replays} replays, rungs {list(rungs)}, {workers} trial(s) at a time, {order}; "
            "agreement = same best config or a full-grid tie"
        )
        print(f"{'policy':58s} {'agreement':>10s} {'compute':>9s} {'p95':>7s}")
        for policy, r in rows.items():
            print(
                f"{policy:58s} {100 * r['agreement']:9.1f}% {100 * r['compute_fraction_mean']:8.1f}% "
                f"{100 * r['compute_fraction_p95']:6.1f}%"
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=200, help="shuffled arrival orders per policy")
    ap.add_argument("--grid", choices=("charlm", "mlp", "both"), default="both", help="which recorded grid(s)")
    ap.add_argument("--record", action="store_true", help="train the char LM grid again (~4-8 min on 2 cores)")
    add_run_options(ap)  # --quick (20 replays) and --out DIR, as every benchmark takes them
    args = ap.parse_args()
    n_replays = 20 if args.quick else args.replays
    results: dict = {"grids": {}}
    if args.grid in ("charlm", "both"):
        grid = charlm_grid(record=args.record, quick=args.quick)
        if grid is None:
            print(f"char LM grid: skipped under --quick (no recording matching this spec at {RECORDING})")
        else:
            results["grids"]["charlm"] = report_grid("char LM", grid, n_replays)
    if args.grid in ("mlp", "both"):
        t0 = time.perf_counter()
        grid = record_grid()
        print(f"\nnumpy MLP grid recorded in {time.perf_counter() - t0:.1f} s")
        results["grids"]["mlp"] = report_grid("numpy MLP", grid, n_replays)
    write_results(results, args.out, "early_stop", quick=args.quick)


if __name__ == "__main__":
    main()
