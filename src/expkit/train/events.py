"""What ``train_charlm`` reports while it runs: one frozen dataclass per kind of progress, handed to the
caller's ``on_event`` (rank 0 only). ``expkit.render.training`` draws them; a caller matches on the type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from expkit.train.sanity import FirstLossCheck, GradCheck, NonFiniteCheck
    from expkit.train.schedule import WarmupCosine
    from expkit.train.training import Calibration

__all__ = ["CheckReported", "Evaluated", "RunPlanned", "StepLogged", "TrainEvent"]


@dataclass(frozen=True)
class RunPlanned:
    """Before step 1: the model size, the schedule fixed for the whole run, and how many log steps
    (``log_steps``: the ticks of a progress bar) lie ahead of ``start_step``."""

    start_step: int
    max_steps: int
    params: int
    schedule: WarmupCosine
    calibration: Calibration | None
    schedule_figure: str | None
    run_id: str | None
    log_steps: int


@dataclass(frozen=True)
class CheckReported:
    """A sanity check ran at ``step`` (the first loss, gradients reaching every parameter, cleared grads)."""

    step: int
    check: FirstLossCheck | GradCheck | NonFiniteCheck


@dataclass(frozen=True)
class Evaluated:
    """Validation loss (nats per character) and perplexity exp(loss) with the weights after ``step`` steps."""

    step: int
    max_steps: int
    val_loss: float
    val_ppl: float


@dataclass(frozen=True)
class StepLogged:
    """A log step (every ``log_interval``): the mean training loss of optimizer step ``step`` (0-based),
    its learning rate, and tokens/s over the optimizer steps so far."""

    step: int
    max_steps: int
    loss: float
    lr: float
    tokens_per_s: float


TrainEvent = RunPlanned | CheckReported | Evaluated | StepLogged
