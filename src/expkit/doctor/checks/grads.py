"""Gradients present and finite for every trainable parameter: a module that ran in the forward but whose
weights got no gradient (a ``.detach()``, ``torch.no_grad`` or ``.data`` in the way), trainable
parameters that get gradients but sit in no optimizer, and NaN/inf gradients at the step."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.provenance import node_leaves, replaced_after_optimizer
from expkit.doctor.findings import user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent

SHOWN_NAMES = 5  # parameter names listed in a message; the evidence holds the count


def _names(probe: Probe) -> dict[int, str]:
    return {id(p): n for m in probe.trained_roots() for n, p in m.named_parameters()}


def _shown(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return ", ".join(names[:SHOWN_NAMES]) + more


@register
class NoGradientReached(Check):
    """Parameters of modules that ran with grad enabled since the last step, held by this optimizer and
    trainable, whose ``.grad`` is still None at the step: the graph was cut above them (a bug, at the detach when
    one was seen), or, with no cut seen, their output was not used (a cost)."""

    name = "no_gradient_reached"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if probe.backwards_since_step == 0:
            return
        held = {id(p) for p in ev.params}
        if all(p.grad is None or not bool(p.grad.any()) for p in ev.params):
            return  # nothing has a gradient: zero_grad_before_step names that
        names = _names(probe)
        cut: list[str] = []
        for root in probe.trained_roots():
            for mname, mod in root.named_modules():
                if id(mod) not in probe.called_with_grad:
                    continue
                for pname, p in mod.named_parameters(recurse=False):
                    if id(p) in held and p.requires_grad and p.grad is None:
                        cut.append(names.get(id(p), f"{mname}.{pname}".lstrip(".")))
        if cut:
            site = _cut_by_detach(probe, {id(p) for p in ev.params if p.requires_grad and p.grad is None})
            if site is None and not probe.cut_sites and not probe.graph_data_writes:
                self._unused(probe, cut)
                return
            probe.report(
                kind="bug",
                check=self.name,
                message=(
                    f"{len(cut)} trainable parameter(s) of modules that ran in the forward got no gradient: "
                    f"{_shown(cut)}; something between them and the loss cuts the graph"
                    + (" (a detach() of a tensor computed from them, at the line named)" if site else "")
                ),
                evidence={"params_without_grad": len(cut), "params_in_optimizer": len(held)},
                fix="remove the .detach() / torch.no_grad() / .data between these modules and the loss, "
                "or set requires_grad=False on them if they are meant to stay frozen",
                where=site,
            )

    def _unused(self, probe: Probe, cut: list[str]) -> None:
        """No detach, ``.data``, ``.item()`` or NumPy cut was seen since the step: the modules' output was computed
        and never used by the loss (a pooler beside the hidden states a head reads, the last block's backcast in
        N-BEATS). A cost, not a wrong gradient: reported as ``performance``."""
        probe.report(
            kind="performance",
            check=self.name,
            message=f"{len(cut)} trainable parameter(s) of modules that ran in the forward got no gradient: "
            f"{_shown(cut)}; no detach/no_grad/.data was seen on the way, so their output was computed and not "
            "used by the loss (an unused pooler or head)",
            evidence={"params_without_grad": len(cut), "cut_seen": False},
            fix="if they should train, use their output in the loss (a result assigned to nothing is lost); if not, "
            "stop computing them (add_pooling_layer=False) or freeze them with requires_grad_(False)",
        )


def _cut_by_detach(probe: Probe, missing: set[int]) -> tuple[str, int] | None:
    """The line of the first ``detach()`` since the last step whose input was computed from parameters that got
    no gradient (``z_q = quantise(encoder(x)).detach()``: the cut above the encoder)."""
    for node, stack in probe.detaches:
        if missing & set(node_leaves(node)):
            file, line = user_line_of(stack)
            if file is not None and line is not None:
                return file, line
    return None


@register
class NotInOptimizer(Check):
    """Trainable parameters of a trained model that receive gradients but that no optimizer updates."""

    name = "param_not_in_optimizer"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if probe.backwards_since_step == 0:
            return
        held = probe.optimizer_param_ids()
        missing = [
            (n, p)
            for root in probe.trained_roots()
            for n, p in root.named_parameters()
            if p.requires_grad and p.grad is not None and id(p) not in held
        ]
        if missing:
            count = sum(p.numel() for _, p in missing)
            probe.report(
                kind="bug",
                check=self.name,
                message=(
                    f"{len(missing)} parameter(s) ({count:,} values) get gradients but no optimizer holds them: "
                    f"{_shown([n for n, _ in missing])}; they never change"
                ),
                evidence={"params_not_in_optimizer": len(missing), "values_not_in_optimizer": count},
                fix="build the optimizer from model.parameters() after every module is created "
                "(or freeze these with requires_grad_(False) if they are not meant to train)",
                where=replaced_after_optimizer(probe, [p for _, p in missing]),
            )


@register
class NonFiniteGradient(Check):
    """Gradients that hold NaN or inf when the optimizer steps on them (GradScaler skips those steps itself)."""

    name = "nonfinite_gradient"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        bad = [p for p in ev.params if p.grad is not None and not bool(torch.isfinite(p.grad).all())]
        if bad:
            names = _names(probe)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{len(bad)} parameter(s) have NaN/inf gradients at optimizer.step(): "
                f"{_shown([names.get(id(p), '?') for p in bad])}",
                evidence={"params_nonfinite_grad": len(bad), "params": len(ev.params)},
                fix="find the first non-finite value (torch.autograd.set_detect_anomaly(True) for one step); "
                "common causes: log(0), division by a zero norm, fp16 overflow without GradScaler",
            )
