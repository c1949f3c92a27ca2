"""Train/eval mode and grad mode of each top-level forward: an evaluation that keeps its autograd graph
(C3.3: no ``torch.no_grad``), an evaluation with dropout/batch-norm still in training mode, and training
steps taken with the model left in ``eval()`` (dropout off)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_frame, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe, StepEvent

MODE_LAYERS = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


def mode_layers(module: nn.Module) -> list[str]:
    """Names of the layers whose behaviour depends on train/eval (dropout with p > 0, batch norm)."""
    out = []
    for name, m in module.named_modules():
        if isinstance(m, MODE_LAYERS) and not (isinstance(m, nn.modules.dropout._DropoutNd) and m.p == 0):
            out.append(name or type(m).__name__)
    return out


def _grad_tensors(output: Any) -> list[torch.Tensor]:
    """The tensors of a forward's output (a tensor, tuple, list, dict or ModelOutput) that require grad."""
    if isinstance(output, torch.Tensor):
        return [output] if output.requires_grad else []
    if isinstance(output, (tuple, list)):
        return [t for o in output for t in _grad_tensors(o)]
    if isinstance(output, dict):
        return [t for o in output.values() for t in _grad_tensors(o)]
    return []


class _EvalForward:
    """A top-level forward run in eval() mode with grad enabled: whether a backward reached its output (a hook on
    each output tensor that requires grad says so), judged at the next optimizer step or the watch's end."""

    def __init__(self, module: nn.Module, where: tuple[str | None, int | None], outputs: list[torch.Tensor]) -> None:
        self.module, self.where, self.backpropagated = module, where, False
        for t in outputs:
            t.register_hook(self._reached)

    def _reached(self, grad: torch.Tensor) -> None:
        self.backpropagated = True


@register
class Modes(Check):
    """Each top-level forward's train/eval and grad mode: an evaluation that keeps its autograd graph, an
    evaluation left in training mode (dropout, batch norm), training steps taken in ``eval()``. Whether an
    eval() forward was an evaluation or a training step is measured, not guessed from the order of calls: a
    backward that reaches its output makes it part of training."""

    name = "modes"
    reports: ClassVar[dict[str, str]] = {
        "train_in_eval_mode": "An optimizer trains a model whose dropout or batch norm layers are in eval mode.",
        "eval_in_train_mode": "An evaluation forward under no_grad runs with dropout and batch norm in train mode.",
        "eval_keeps_graph": "An evaluation forward builds an autograd graph that nothing backpropagates.",
    }

    def __init__(self) -> None:
        self.pending: list[_EvalForward] = []

    def _judge(self, probe: Probe) -> None:
        pending, self.pending = self.pending, []
        kept_graph = next((e for e in pending if not e.backpropagated), None)
        if kept_graph is not None:
            probe.report(
                kind="bug",
                check="eval_keeps_graph",
                message=f"{type(kept_graph.module).__name__} ran in eval() mode with grad enabled and its output was "
                "never backpropagated: every activation of the forward is kept for a backward that never comes",
                evidence={"training": False, "grad_enabled": True, "output_requires_grad": True},
                fix="wrap evaluation in `with torch.no_grad():` (or torch.inference_mode())",
                where=kept_graph.where,
            )
        trained = probe.optimizer_param_ids()
        for e in pending:
            if e.backpropagated and self._trained_in_eval(probe, e, trained):
                return

    def _trained_in_eval(self, probe: Probe, e: _EvalForward, trained: set[int]) -> bool:
        module, where = e.module, e.where
        layers = mode_layers(module)
        if not layers or any(m.training for m in module.modules() if isinstance(m, MODE_LAYERS)):
            return False  # nothing behaves differently, or a layer set back to train(): modes chosen layer by layer
        if trained and not any(id(p) in trained for p in module.parameters()):
            return False  # a frozen network (a perceptual loss, a teacher) kept in eval() on purpose
        set_eval = user_line_of(probe.eval_sites.get(id(module)))
        if set_eval[0] is not None:
            where = set_eval  # the line that put the model in eval mode, not the forward that showed it
        probe.report(
            kind="bug",
            check="train_in_eval_mode",
            message=f"{type(module).__name__} is trained while in eval() mode: {len(layers)} dropout/batch-norm "
            f"layer(s) ({', '.join(layers[:3])}) run as at inference (no dropout, frozen statistics)",
            evidence={"training": False, "mode_layers": len(layers)},
            fix="call model.train() after each evaluation, before the next training step",
            where=where,
        )
        return True

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        outputs = _grad_tensors(ev.output) if not ev.training and ev.grad_enabled else []
        if outputs:
            self.pending.append(_EvalForward(ev.module, user_frame(3), outputs))
        elif ev.training and not ev.grad_enabled:
            layers = mode_layers(ev.module)
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

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if probe.backwards_since_step == 0:
            return
        self._judge(probe)

    def finish(self, probe: Probe) -> None:
        self._judge(probe)
