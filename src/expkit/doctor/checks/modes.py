"""Train/eval mode and grad mode of each top-level forward: an evaluation that keeps its autograd graph
(C3.3: no ``torch.no_grad``), an evaluation with dropout/batch-norm still in training mode, and training
steps taken with the model left in ``eval()`` (dropout off)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_frame, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, ForwardEvent, Probe, StepEvent

_MODE_LAYERS = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


def _mode_layers(module: nn.Module) -> list[str]:
    """Names of the layers whose behaviour depends on train/eval (dropout with p > 0, batch norm)."""
    out = []
    for name, m in module.named_modules():
        if isinstance(m, _MODE_LAYERS) and not (isinstance(m, nn.modules.dropout._DropoutNd) and m.p == 0):
            out.append(name or type(m).__name__)
    return out


def _requires_grad(output: Any) -> bool:
    if isinstance(output, torch.Tensor):
        return output.requires_grad
    if isinstance(output, (tuple, list)):
        return any(_requires_grad(o) for o in output)
    if isinstance(output, dict):
        return any(_requires_grad(o) for o in output.values())
    return False


@register
class Modes(Check):
    """Each top-level forward's train/eval and grad mode: an evaluation that keeps its autograd graph, an
    evaluation left in training mode (dropout, batch norm), training steps taken in ``eval()``."""

    name = "modes"

    def __init__(self) -> None:
        self.pending: tuple[nn.Module, tuple[str | None, int | None]] | None = None

    def _flush_eval_graph(self, probe: Probe) -> None:
        if self.pending is None:
            return
        module, where = self.pending
        self.pending = None
        probe.report(
            kind="bug",
            check="eval_keeps_graph",
            message=f"{type(module).__name__} ran in eval() mode with grad enabled and its output was never "
            "backpropagated: every activation of the forward is kept for a backward that never comes",
            evidence={"training": False, "grad_enabled": True, "output_requires_grad": True},
            fix="wrap evaluation in `with torch.no_grad():` (or torch.inference_mode())",
            where=where,
        )

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        self._flush_eval_graph(probe)  # a new forward without backward in between
        if not ev.training and ev.grad_enabled and _requires_grad(ev.output):
            self.pending = (ev.module, user_frame(3))
        elif ev.training and not ev.grad_enabled:
            layers = _mode_layers(ev.module)
            held = probe.optimizer_param_ids()
            trained = any(id(p) in held for p in ev.module.parameters()) or not probe.optimizers
            if layers and trained:
                probe.report(
                    kind="bug",
                    check="eval_in_train_mode",
                    message=f"{type(ev.module).__name__} ran under no_grad (an evaluation) while still in train() "
                    f"mode: {len(layers)} dropout/batch-norm layer(s) ({', '.join(layers[:3])}) behave as in "
                    "training, so the metric is noisy and batch-norm statistics move",
                    evidence={"training": True, "grad_enabled": False, "mode_layers": len(layers)},
                    fix="call model.eval() before evaluating and model.train() before training again",
                )

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if self.pending is None:
            return
        module, where = self.pending
        self.pending = None
        layers = _mode_layers(module)
        if any(m.training for m in module.modules() if isinstance(m, _MODE_LAYERS)):
            return  # a layer set back to train() under an eval() model: the modes are chosen layer by layer
        set_eval = user_line_of(probe.eval_sites.get(id(module)))
        if set_eval[0] is not None:
            where = set_eval  # the line that put the model in eval mode, not the forward that showed it
        if layers:
            probe.report(
                kind="bug",
                check="train_in_eval_mode",
                message=f"{type(module).__name__} is trained while in eval() mode: {len(layers)} dropout/batch-norm "
                f"layer(s) ({', '.join(layers[:3])}) run as at inference (no dropout, frozen statistics)",
                evidence={"training": False, "mode_layers": len(layers)},
                fix="call model.train() after each evaluation, before the next training step",
                where=where,
            )

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if probe.backwards_since_step == 0:
            return
        self._flush_eval_graph(probe)

    def finish(self, probe: Probe) -> None:
        self._flush_eval_graph(probe)
