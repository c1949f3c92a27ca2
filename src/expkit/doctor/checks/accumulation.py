"""Gradient accumulation without loss scaling: k micro-batches, each drawn from the DataLoader (or sliced from one
data tensor: ``x[i : i + m]``) and each
backpropagating its mean loss undivided, so the step's gradient is the sum of k mean gradients, about k
times the gradient of one batch of k x the micro-batch size (for SGD: an lr k times too large; with
clipping: clipped k times more often)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, ForwardEvent, LossEvent, Probe, StepEvent

MEAN_LOSSES = ("cross_entropy", "nll_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy", "mse_loss")
SUMMED_MIN = 3  # micro-batch losses in one summed backward that make accumulation (two: a two-batch objective)
SAME_VALUE_RTOL = 1e-4  # the backpropagated value equals the loss function's output: nothing divided it


@dataclass
class _MicroBatch:
    backward_value: float | None  # the scalar handed to backward()
    loss_value: float | None  # the last mean-reduced loss function output before it
    batches_drawn: int  # DataLoader batches drawn since the previous backward
    site: tuple[str | None, int | None]  # the user's backward() call
    fresh: int = 0  # forwards since the previous backward, from the window's one call site, each on a new input


def _grad_norm(params: list[torch.Tensor]) -> float:
    grads = [p.grad.detach().double().norm() for p in params if p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0


@register
class AccumulationScaling(Check):
    """At a step that ends a window of k >= 2 backwards, each after a fresh batch (a DataLoader batch, or a model
    input sliced from one data tensor at an offset not used since the last step): when every one backpropagated
    its loss function's mean value unchanged, the loss was not divided by k. Two backwards on one batch (a GAN's
    real and fake terms) are not accumulation and are not judged."""

    name = "accumulation_not_scaled"

    def __init__(self) -> None:
        self.window: list[_MicroBatch] = []
        self.loss_value: float | None = None
        self.losses: list[tuple[int, float, str]] = []  # (id, value, function) of the mean losses since a backward
        self.batches_drawn = 0
        self.first_micro_norm: float | None = None
        self.slices: set[tuple[int, int]] = set()  # (id of the sliced data tensor, offset) since the last step
        self.sites: set[tuple[str | None, int | None]] = set()  # the training forwards' call sites since the step
        self.inputs: list[torch.Tensor] = []  # their inputs (a micro-batch made fresh: randn, a generator)
        self.fresh = 0  # forwards since the previous backward on a new input from the one call site

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "loader.next":
            self.batches_drawn += 1

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = ev.first_tensor()
        if x is None or x.requires_grad or not (ev.training and ev.grad_enabled):
            return
        # a micro-batch made in the loop (torch.randn, a generator of the user's): the same forward line each
        # time, on an input unlike every earlier one of this step (a GAN's real and fake go through two lines)
        self.sites.add(user_frame(3))
        if not any(x is y or (x.shape == y.shape and torch.equal(x, y)) for y in self.inputs):
            self.fresh += 1
        self.inputs.append(x)
        if x._base is None:
            return
        key = (id(x._base), int(x.storage_offset()))
        if key not in self.slices:
            self.slices.add(key)
            self.batches_drawn += 1

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if ev.function in MEAN_LOSSES and ev.value.numel() == 1 and ev.kwargs.get("reduction", "mean") == "mean":
            self.loss_value = float(ev.value.detach())
            if not self.losses or self.losses[-1][0] != id(ev.value):  # a loss seen twice (a nested call) once
                self.losses.append((id(ev.value), self.loss_value, ev.function))
        else:
            self.loss_value = None

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if len(self.window) == 1:  # the first micro-batch's gradient is in .grad now
            self.first_micro_norm = _grad_norm(
                [p for opt in list(probe.optimizers) for g in opt.param_groups for p in g["params"]]
            )
        value = float(ev.tensor.detach()) if ev.tensor.numel() == 1 else None
        from expkit.doctor.findings import user_frame

        self._summed(probe, ev, value)
        self.window.append(_MicroBatch(value, self.loss_value, self.batches_drawn, user_frame(3), self.fresh))
        self.loss_value, self.batches_drawn, self.fresh, self.losses = None, 0, 0, []

    def _summed(self, probe: Probe, ev: BackwardEvent, value: float | None) -> None:
        """One backward of the sum of k >= SUMMED_MIN micro-batches' mean losses of one loss function
        (``torch.stack(losses).sum()``), each on a fresh input from one forward line: the same k-fold gradient,
        named where the sum was made."""
        k = len(self.losses)
        if value is None or k < SUMMED_MIN or self.fresh != k or len(self.sites) != 1 or self.window:
            return
        if len({function for _, _, function in self.losses}) != 1:
            return  # a classifier's and a discriminator's losses summed: terms of one objective, not micro-batches
        total = sum(v for _, v, _ in self.losses)
        if abs(value - total) > SAME_VALUE_RTOL * max(1.0, abs(value)):
            return
        from expkit.doctor.checks.graph_kept import made_where
        from expkit.doctor.findings import user_frame

        made = made_where(ev.tensor.grad_fn) if ev.tensor.grad_fn is not None else (None, None)
        where = made if made[0] is not None else user_frame(4)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"one backward of the sum of {k} micro-batches' mean losses: the gradient is {k}x the mean "
            f"gradient of the {k} micro-batches (a sum where a mean was meant)",
            evidence={"micro_batches": k, "backward_value": value, "sum_of_mean_losses": total},
            fix=f"average the micro-batch losses (torch.stack(losses).mean(), or divide the sum by {k})",
            where=where if where[0] is not None else None,
        )

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        window, k = self.window, len(self.window)
        made_here = len(self.sites) == 1 and all(m.fresh >= 1 for m in window)  # fresh inputs from one line
        if k < 2 or any(m.loss_value is None or m.backward_value is None for m in window):
            return
        if not made_here and any(m.batches_drawn < 1 for m in window):
            return
        ratios = [m.backward_value / m.loss_value for m in window if m.loss_value]  # type: ignore[operator]
        if len(ratios) != k or any(abs(r - 1.0) > SAME_VALUE_RTOL for r in ratios):
            return
        step_norm = _grad_norm(ev.params)
        first = self.first_micro_norm or float("nan")
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the step accumulated {k} micro-batches, each backpropagating its mean loss undivided: the "
            f"gradient is the sum of {k} batch means ({step_norm / first:.2f}x the first micro-batch's gradient "
            f"norm), about {k}x what one batch of {k} micro-batches gives",
            evidence={
                "micro_batches": k,
                "backward_value_over_loss_value": ratios[0],
                "step_grad_norm": step_norm,
                "first_micro_batch_grad_norm": first,
                "step_over_micro_batch_grad_norm": step_norm / first,
            },
            fix=f"divide each micro-batch's loss by the accumulation steps ((loss / {k}).backward()) so the step "
            "sees the mean gradient",
            where=window[0].site if window[0].site[0] is not None else None,
        )

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.window, self.first_micro_norm = [], None
        self.slices.clear()
        self.sites.clear()
        self.inputs.clear()
        self.fresh, self.losses = 0, []


def _accelerate_accumulation_steps() -> int:
    """The ``gradient_accumulation_steps`` an ``accelerate.Accelerator`` of this process was built with (its shared
    gradient state), else 1 (no accelerate, or none built)."""
    state = sys.modules.get("accelerate.state")
    gradient_state = getattr(state, "GradientState", None)
    shared = getattr(gradient_state, "_shared_state", None)
    if not shared:
        return 1
    steps = (shared.get("plugin_kwargs") or {}).get("num_steps", 1)
    return steps if isinstance(steps, int) else 1


@register
class AccelerateAccumulationIgnored(Check):
    """An ``Accelerator(gradient_accumulation_steps=k)``, k >= 2, whose ``accelerator.backward`` divides every loss
    by k, while the optimizer steps after every single backward (two watched steps in a row): the loop never enters
    ``accelerator.accumulate(model)``, outside which accelerate syncs and steps each micro-batch. Nothing is
    accumulated and every update is k times smaller. Names the backward call."""

    name = "accelerate_accumulation_ignored"

    def __init__(self) -> None:
        self.site: tuple[str | None, int | None] = (None, None)  # the user's line of this step's backward
        self.single: list[bool] = []  # per step: one backward since the previous step

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if "accelerate" in sys.modules:
            self.site = user_frame(3)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if "accelerate" not in sys.modules:
            return
        self.single.append(probe.backwards_since_step == 1)
        k = _accelerate_accumulation_steps()
        if k < 2 or self.single[-2:] != [True, True]:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the Accelerator accumulates over {k} steps (gradient_accumulation_steps={k}): "
            f"accelerator.backward divides each loss by {k}, yet the optimizer stepped after every single backward: "
            f"outside `with accelerator.accumulate(model):` accelerate steps each micro-batch, so nothing is "
            f"accumulated and every update is {k} times smaller",
            evidence={"gradient_accumulation_steps": k, "backwards_per_step": 1},
            fix="wrap each iteration's forward, backward, step and zero_grad in `with accelerator.accumulate(model):`",
            where=self.site if self.site[0] is not None else None,
        )
