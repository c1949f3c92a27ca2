"""The learning-rate schedule: linear warmup, then cosine decay to a floor (C3.6).

As nanoGPT's ``get_lr``; here a frozen dataclass so the whole curve can be drawn before step 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["WarmupCosine"]


@dataclass(frozen=True)
class WarmupCosine:
    """lr(step) for ``step`` = 0 .. max_steps - 1 (the lr used by optimizer step number ``step + 1``).

    Warmup: ``lr_max * (step + 1) / warmup_steps`` for step < warmup_steps; then
    ``lr_min + 0.5 (1 + cos(pi p)) (lr_max - lr_min)`` with p going 0 -> 1 over the remaining steps
    (Loshchilov & Hutter 2017, SGDR, arXiv:1608.03983, without restarts).

    Example:
        >>> s = WarmupCosine(lr_max=1e-3, lr_min=1e-4, warmup_steps=10, max_steps=100)
        >>> round(s.lr_at(0), 6), round(s.lr_at(9), 6), round(s.lr_at(99), 6)
        (0.0001, 0.001, 0.0001)
    """

    lr_max: float
    lr_min: float
    warmup_steps: int
    max_steps: int

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if not 0 <= self.warmup_steps <= self.max_steps:
            raise ValueError(f"warmup_steps={self.warmup_steps} must be in [0, max_steps={self.max_steps}]")
        if not 0 <= self.lr_min <= self.lr_max:
            raise ValueError(f"need 0 <= lr_min ({self.lr_min}) <= lr_max ({self.lr_max})")

    def lr_at(self, step: int) -> float:
        if step < self.warmup_steps:
            return self.lr_max * (step + 1) / self.warmup_steps
        decay_steps = self.max_steps - self.warmup_steps
        if decay_steps <= 1:
            return self.lr_max
        progress = min(1.0, (step - self.warmup_steps) / (decay_steps - 1))  # 0 -> 1
        return self.lr_min + 0.5 * (1.0 + math.cos(math.pi * progress)) * (self.lr_max - self.lr_min)

    def curve(self) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """Every step and its lr, for the figure drawn before training."""
        steps = tuple(range(self.max_steps))
        return steps, tuple(self.lr_at(s) for s in steps)

    def lr_lambda(self, step: int) -> float:
        """Multiplier for ``torch.optim.lr_scheduler.LambdaLR`` with base lr = ``lr_max``."""
        return self.lr_at(step) / self.lr_max if self.lr_max > 0 else 0.0
