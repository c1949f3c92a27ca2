"""The optimizer step changes the weights: over the watched steps at least one parameter must move.
A step that moves nothing means lr 0, all-zero gradients or parameters that cannot change."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent


@register
class StepChangesWeights(Check):
    """Snapshot the parameters before ``step``, compare after; report at the end of the watch when no
    watched step of an optimizer changed any of its parameters (one step at lr 0 is a warm-up's start)."""

    name = "step_changes_nothing"

    def __init__(self) -> None:
        self.before: dict[int, list[torch.Tensor]] = {}
        self.moved: dict[int, float] = {}
        self.where: dict[int, tuple[str | None, int | None]] = {}
        self.lrs: dict[int, list[float]] = {}
        self.names: dict[int, str] = {}

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        from expkit.doctor.findings import user_frame

        key = id(ev.optimizer)
        self.before[key] = [p.detach().clone() for p in ev.params]
        self.where.setdefault(key, user_frame(3))
        self.lrs.setdefault(key, []).extend(float(g.get("lr", 0.0)) for g in ev.optimizer.param_groups)
        self.names[key] = type(ev.optimizer).__name__

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        key = id(ev.optimizer)
        before = self.before.pop(key, None)
        if before is None:
            return
        moved = max(
            (float((p.detach() - b).abs().max()) for p, b in zip(ev.params, before, strict=True) if p.numel()),
            default=0.0,
        )
        moved = moved if moved == moved else float("inf")  # NaN weights moved (another check names why)
        self.moved[key] = max(self.moved.get(key, 0.0), moved)

    def finish(self, probe: Probe) -> None:
        for key, moved in self.moved.items():
            if moved > 0:
                continue
            lrs = self.lrs.get(key, [])
            lr_zero = bool(lrs) and max(lrs) == 0.0
            cause = (
                "its learning rate was 0 at every watched step"
                if lr_zero
                else ("its gradients were zero/None or its parameters cannot change")
            )
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{self.names.get(key, 'the optimizer')}.step() changed no weight in the watched steps: "
                f"{cause}",
                evidence={"max_abs_weight_change": moved, "max_lr": max(lrs) if lrs else None},
                fix="check the lr schedule's first values (a warm-up that starts and stays at 0), that the loss "
                "depends on the parameters, and that the parameters handed to the optimizer are the model's",
                where=self.where.get(key),
            )
