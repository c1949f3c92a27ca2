"""The learning-rate schedule drawn as a figure before step 1 (claim C3.6)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from expkit.train.schedule import WarmupCosine

__all__ = ["draw_lr_schedule"]


def draw_lr_schedule(schedule: WarmupCosine, path: Path) -> Path:
    """The learning-rate schedule as a figure (lr against step), drawn before step 1 (C3.6)."""
    from expkit.render.figures import new_figure, save_figure

    steps, lrs = schedule.curve()
    fig, (ax,) = new_figure(1, width_in=6.0, height_in=3.2)
    ax.plot(steps, lrs, "C0-")
    if schedule.warmup_steps:  # steps are 0-based: the peak is step warmup_steps - 1
        ax.axvline(
            schedule.warmup_steps - 1,
            color="grey",
            lw=0.8,
            ls="--",
            label=f"end of warmup ({schedule.warmup_steps} steps)",
        )
    ax.set(
        xlabel="optimizer step",
        ylabel="learning rate",
        title=f"warmup + cosine: {schedule.lr_max:g} -> {schedule.lr_min:g} over {schedule.max_steps} steps",
    )
    if schedule.warmup_steps:
        ax.legend()
    return save_figure(fig, path)
