"""``zero_grad`` placement: gradients carried into the next step (missing ``zero_grad``: they grow step
over step, C3.2) and gradients cleared between ``backward`` and ``step`` (the step sees zeros)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, Probe, StepEvent


def _grad_norm(params: list[torch.Tensor]) -> float:
    grads = [p.grad.detach().float().norm() for p in params if p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0


@register
class MissingZeroGrad(Check):
    """At the first backward after an optimizer step, the optimizer's parameters must hold no gradient
    (None or zeros); otherwise this backward adds onto the last step's gradient."""

    name = "missing_zero_grad"

    def __init__(self) -> None:
        self.norm_at_step: dict[int, float] = {}

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.norm_at_step[id(ev.optimizer)] = _grad_norm(ev.params)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if not ev.first_after_step:
            return
        for opt in list(probe.optimizers):
            params = [p for g in opt.param_groups for p in g["params"]]
            stale = [p for p in params if p.grad is not None and bool(torch.any(p.grad != 0))]
            if not stale:
                continue
            probe.report(
                kind="bug",
                check=self.name,
                message=(
                    f"{len(stale)} of {len(params)} parameters still hold the last step's gradient when the next "
                    "backward starts: zero_grad is missing, so gradients add up step over step"
                ),
                evidence={
                    "params_with_stale_grad": len(stale),
                    "params": len(params),
                    "stale_grad_norm": _grad_norm(stale),
                    "grad_norm_at_last_step": self.norm_at_step.get(id(opt), 0.0),
                },
                fix="call optimizer.zero_grad(set_to_none=True) once per step, after optimizer.step() "
                "(or before loss.backward()); with gradient accumulation, after the step that ends the window",
            )
            return


@register
class ZeroGradBeforeStep(Check):
    """At ``optimizer.step()`` after a backward, some gradient must be non-zero; all zeros (or None) means
    the gradients were cleared between ``backward`` and ``step``."""

    name = "zero_grad_before_step"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if probe.backwards_since_step == 0:  # a closure (LBFGS, Lightning) runs its backward inside step
            return
        trainable = [p for p in ev.params if p.requires_grad]
        if not trainable or any(p.grad is not None and bool(torch.any(p.grad != 0)) for p in trainable):
            return
        nones = sum(p.grad is None for p in trainable)
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"optimizer.step() ran after {probe.backwards_since_step} backward call(s) but every gradient of "
                f"its {len(trainable)} parameters is zero or None: the gradients were cleared between "
                "backward and step (or the loss does not depend on these parameters)"
            ),
            evidence={
                "backward_calls_since_last_step": probe.backwards_since_step,
                "params": len(trainable),
                "params_grad_none": nones,
                "grad_norm": 0.0,
            },
            fix="order the step as zero_grad -> forward -> backward -> step; never zero_grad between backward and step",
        )
