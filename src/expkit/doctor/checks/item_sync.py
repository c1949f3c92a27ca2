"""``.item()`` on an accelerator tensor inside the loop (C3.7): each call waits for the device to finish,
so the host cannot queue the next step. A performance finding, not a bug; CPU tensors cost nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent


@register
class ItemSync(Check):
    """``.item()`` on an accelerator tensor at every step: each call waits for the device (a performance
    finding, not a bug)."""

    name = "item_sync"

    def __init__(self) -> None:
        self.calls_by_step: list[int] = [0]
        self.where: tuple[str | None, int | None] | None = None

    def on_item(self, probe: Probe, tensor: Any) -> None:
        self.calls_by_step[-1] += 1
        if self.where is None:
            self.where = user_frame(3)

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        if probe.lead is not None and probe.lead() is ev.optimizer:
            self.calls_by_step.append(0)

    def finish(self, probe: Probe) -> None:
        steps = self.calls_by_step[:-1]  # the last entry is the step after the watch, not begun
        if not steps or min(steps) == 0:
            return
        probe.report(
            kind="performance",
            check=self.name,
            message=f".item() on a device tensor {min(steps)}-{max(steps)} time(s) per step: each call blocks "
            "until the accelerator has finished, so the host cannot queue the next step's kernels",
            evidence={"item_calls_per_step_min": min(steps), "item_calls_per_step_max": max(steps)},
            fix="accumulate the loss on the device (total += loss.detach()) and call .item() every N steps",
            where=self.where,
        )
