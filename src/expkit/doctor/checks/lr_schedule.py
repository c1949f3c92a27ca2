"""The learning rate the optimizer actually used vs the schedule's intent: a scheduler declared in optimizer
steps (a warm-up of N steps, a total of M steps) that is not stepped between optimizer steps - stepped once
per epoch, or never - so the lr stays at its warm-up start."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent

# The schedulers whose horizon is declared in optimizer steps, by construction: transformers'
# get_*_schedule_with_warmup build LambdaLR(partial(..., num_warmup_steps=, num_training_steps=));
# OneCycleLR and CyclicLR are documented as stepped "after each batch". A StepLR or CosineAnnealingLR may be
# meant per epoch, so those are not judged.
PER_BATCH_SCHEDULERS = ("OneCycleLR", "CyclicLR")


def _declared_steps(scheduler: Any) -> dict[str, int] | None:
    """``{"warmup_steps": .., "total_steps": ..}`` (either may be absent) when the horizon is in steps, else None."""
    name = type(scheduler).__name__
    if name in PER_BATCH_SCHEDULERS:
        total = getattr(scheduler, "total_steps", None)
        return {"total_steps": int(total)} if total is not None else {}
    for fn in getattr(scheduler, "lr_lambdas", []) or []:
        if isinstance(fn, functools.partial):
            kw = fn.keywords
            found = {
                k: int(kw[s])
                for k, s in (("warmup_steps", "num_warmup_steps"), ("total_steps", "num_training_steps"))
                if s in kw
            }
            if found:
                return found
    return None


def _intended_lr(scheduler: Any) -> float | None:
    """The lr a LambdaLR would give at its next step (base lr x lambda(last_epoch + 1)), or None."""
    fns = getattr(scheduler, "lr_lambdas", None)
    if not fns:
        return None
    return float(scheduler.base_lrs[0] * fns[0](scheduler.last_epoch + 1))


@register
class ScheduleNotStepped(Check):
    """Watches each scheduler bound to an optimizer: its ``_step_count`` (PyTorch's count of ``step()`` calls)
    at consecutive steps of that optimizer. A per-batch schedule that did not advance between them is reported
    with the lr the optimizer used at each step."""

    name = "schedule_not_stepped"

    def __init__(self) -> None:
        self.seen: dict[int, tuple[int, float]] = {}  # id(scheduler) -> (step count, lr) at the last opt step

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        for sched in list(probe.schedulers):
            if getattr(sched, "optimizer", None) is not ev.optimizer or type(sched).__name__ == "ReduceLROnPlateau":
                continue
            count, lr = int(getattr(sched, "_step_count", 0)), float(ev.optimizer.param_groups[0]["lr"])
            last = self.seen.get(id(sched))
            self.seen[id(sched)] = (count, lr)
            if last is None or count != last[0]:
                continue
            declared = _declared_steps(sched)
            if declared is None:
                continue
            batches = probe.dataloader_batches()
            intended = _intended_lr(sched)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{type(sched).__name__} is declared in optimizer steps ({_steps_text(declared)}) but was "
                f"not stepped between two optimizer steps: the optimizer used lr {last[1]:.3g} then {lr:.3g}"
                + (f" where the schedule meant {intended:.3g}" if intended is not None else "")
                + " - a scheduler stepped once per epoch (or never) stays in its warm-up",
                evidence={
                    "lr_used_previous_step": last[1],
                    "lr_used_this_step": lr,
                    "lr_intended_this_step": intended,
                    "scheduler_steps_between": 0,
                    **declared,
                    "loader_batches_per_epoch": batches,
                },
                fix="call scheduler.step() right after optimizer.step(), inside the batch loop "
                "(or build the schedule in epochs if it is meant to be stepped per epoch)",
            )


def _steps_text(declared: dict[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in declared.items()) or "per batch"
