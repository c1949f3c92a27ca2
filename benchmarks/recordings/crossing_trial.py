"""One trial of the crossing grid (benchmarks/bench_early_stop.py --record-crossing runs it through
``expkit sweep``): a numpy tanh MLP (width ``--hidden``) fitted by SGD with momentum 0.9, a cosine learning
rate from ``--lr`` to 0 over 400 steps, gradients clipped to norm 1, batch 16, on a fixed nonlinear regression
set (y = sin(X w1) . w2 / 2 + noise, w1 of scale 0.6). Prints ``{"step", "loss"}`` (validation MSE) every 25
steps. The seed draws the initial weights and the batches; ``--data-seed`` the regression set.

Why it crosses: a high learning rate is noisy while it is large (clipped steps, validation loss above the small
rates' at steps 50-150) and ends lowest once the cosine has brought it down; a small one is ahead early and
ends underfitted.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

STEPS, EVERY, BATCH, MOMENTUM, CLIP = 400, 25, 16, 0.9, 1.0


def regression_set(n: int = 512, d: int = 8, data_seed: int = 1234) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(data_seed)
    x = rng.normal(size=(2 * n, d))
    w1, w2 = rng.normal(scale=0.6, size=(d, 6)), rng.normal(size=6)
    y = np.sin(x @ w1) @ w2 / 2 + 0.1 * rng.normal(size=2 * n)
    return x[:n], y[:n], x[n:], y[n:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--data-seed", type=int, default=1234, help="draws the regression set (the held-out grid: 4321)")
    args = ap.parse_args()
    x, y, xv, yv = regression_set(data_seed=args.data_seed)
    rng = np.random.default_rng(args.seed)
    w1 = rng.normal(scale=1 / np.sqrt(x.shape[1]), size=(x.shape[1], args.hidden))
    b1 = np.zeros(args.hidden)
    w2 = rng.normal(scale=1 / np.sqrt(args.hidden), size=args.hidden)
    params = [w1, b1, w2]
    moms = [np.zeros_like(p) for p in params]
    for step in range(1, STEPS + 1):
        lr = args.lr * 0.5 * (1 + math.cos(math.pi * step / STEPS))
        idx = rng.integers(0, len(x), size=BATCH)
        h = np.tanh(x[idx] @ w1 + b1)
        err = h @ w2 - y[idx]
        g_h = np.outer(err, w2) * (1 - h**2)
        grads = [x[idx].T @ g_h / BATCH, g_h.mean(axis=0), h.T @ err / BATCH]
        norm = math.sqrt(sum(float((g**2).sum()) for g in grads))
        scale = min(1.0, CLIP / (norm + 1e-12))
        for p, m, g in zip(params, moms, grads, strict=True):
            m *= MOMENTUM
            m += scale * g
            p -= lr * m
        if step % EVERY == 0:
            loss = float(np.mean((np.tanh(xv @ w1 + b1) @ w2 - yv) ** 2))
            print(json.dumps({"step": step, "loss": loss}), flush=True)


if __name__ == "__main__":
    main()
