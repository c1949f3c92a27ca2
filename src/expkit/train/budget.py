"""A time budget turned into a step count before step 1 (so the cosine ends when the budget does), and
the hard cap that ends a run whose steps ran slower than calibrated."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from expkit.train.corpus import Corpus
from expkit.train.data import make_loader
from expkit.train.distributed import DistContext
from expkit.train.loop import TrainingSetup

__all__ = ["Calibration", "calibrate", "over_budget"]


@dataclass(frozen=True)
class Calibration:
    """How many steps fit the time budget: ``max_steps = budget_s / step_s`` (measured before step 1)."""

    budget_s: float
    step_s: float
    steps_timed: int
    max_steps: int


def calibrate(setup: TrainingSetup, corpus: Corpus, *, budget_s: float, seed: int, n_timed: int = 3) -> Calibration:
    """Time forward + backward on throwaway batches (no optimizer step, gradients cleared): the step
    time that decides ``max_steps``. One untimed warm-up step first. Under DDP rank 0's count wins."""
    cfg = setup.train_config
    batches = iter(
        make_loader(
            corpus.train,
            block_size=cfg.seq_len,
            batch_size=cfg.batch_size,
            seed=seed + 7919,  # batches no training step will see
            stop=(n_timed + 1) * cfg.grad_accum,
        )
    )
    times = []
    for i in range(n_timed + 1):
        t0 = time.perf_counter()
        for _ in range(cfg.grad_accum):
            x, y = next(batches)
            logits = setup.module(x.to(setup.device))
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.to(setup.device).view(-1))
            loss.backward()
        float(loss.detach())  # wait for the device
        setup.optimizer.zero_grad(set_to_none=True)
        if i:
            times.append(time.perf_counter() - t0)
    # forward + backward only; clip, AdamW and data add ~5% (measured against full steps on 2 cores)
    step_s = sorted(times)[len(times) // 2] * 1.05
    max_steps = _from_rank_0(max(cfg.warmup_steps + 2, int(budget_s / step_s)), setup.dist)
    return Calibration(budget_s=budget_s, step_s=step_s, steps_timed=n_timed, max_steps=max_steps)


def _from_rank_0(value: int, dist: DistContext) -> int:
    """Every rank must run the same number of steps: rank 0's count, broadcast."""
    if not dist.enabled:
        return value
    import torch.distributed as tdist

    box = [value]
    tdist.broadcast_object_list(box, src=0)
    return int(box[0])


def over_budget(mine: bool, dist: DistContext) -> bool:
    """True when any rank ran over its time budget (all ranks must stop at the same step)."""
    if not dist.enabled:
        return mine
    import torch.distributed as tdist

    flag = torch.tensor([1.0 if mine else 0.0])
    tdist.all_reduce(flag, op=tdist.ReduceOp.MAX)
    return bool(flag.item())
