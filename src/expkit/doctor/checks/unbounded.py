"""A loss with no minimum in one of its parameters (issue 32): a small trainable tensor used in the loss outside
any module (learned task weights, a learned scale), in which the loss is linear (its second derivative is zero)
with a gradient of one sign in every entry. Gradient descent then moves it the same way at every step and the
loss falls without bound by shrinking it (``sum(w_i * loss_i)`` with no regulariser drives every ``w_i`` down
and below zero) instead of by fitting the data. Measured at the first backward of each watched step with
``torch.autograd.grad`` on the program's own graph (kept, nothing accumulated into ``.grad``); named at the
line that combined the parameter with the loss (anomaly mode's creation stack)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.graph_kept import made_where
from expkit.doctor.checks.provenance import graph_leaves

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, Probe

MAX_ELEMENTS = 64  # loss-level parameters are a handful of weights or scales, not layers


def _consumer(loss: torch.Tensor, param: torch.Tensor) -> Any:
    """The graph node that takes ``param`` in (the one whose input is its AccumulateGrad), else None."""
    todo, seen = [loss.grad_fn], set()
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and getattr(nxt, "variable", None) is param:
                return node
            todo.append(nxt)
    return None


@register
class LossUnboundedInParameter(Check):
    """A small trainable tensor used in the loss outside any module, in which the loss is linear with a gradient
    of one sign in every entry: the loss has no minimum in it, and the optimizer lowers the loss by shrinking it
    (learned task weights with no regulariser) instead of by fitting the data."""

    name = "loss_unbounded_in_parameter"

    def __init__(self) -> None:
        self.judged: set[int] = set()

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        loss = ev.tensor
        if not ev.first_after_step or loss.grad_fn is None or loss.numel() != 1:
            return
        held = probe.optimizer_param_ids()
        # a module's own parameters: those of the modules that ran this step, and of every top-level module that
        # ran with grad (a GAN's generator ran before the discriminator's step, which starts a new step)
        ran = [*probe.ran_modules.values(), *probe.roots.values()]
        in_modules = {id(p) for m in ran for p in m.parameters()}
        loose = [
            p
            for k, p in graph_leaves(loss).items()
            if k in held and k not in in_modules and k not in self.judged and 0 < p.numel() <= MAX_ELEMENTS
        ]
        if not loose:
            return
        grads = torch.autograd.grad(loss, loose, retain_graph=True, create_graph=True, allow_unused=True)
        for param, grad in zip(loose, grads, strict=True):
            self.judged.add(id(param))
            if grad is None or not _one_sign(grad):
                continue
            if grad.requires_grad:
                (second,) = torch.autograd.grad(grad.sum(), param, retain_graph=True, allow_unused=True)
                if second is not None and bool(second.detach().abs().max() > 0):
                    continue  # curved in it (a regulariser, an exp(-s) weight): a minimum exists
            self._report(probe, loss, param, grad.detach())

    def _report(self, probe: Probe, loss: torch.Tensor, param: torch.Tensor, grad: torch.Tensor) -> None:
        node = _consumer(loss, param)
        where = made_where(node) if node is not None else (None, None)
        direction = "down" if bool((grad > 0).all()) else "up"
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the loss is linear in a trainable tensor of {param.numel()} values used outside any module "
            f"(its gradient has one sign everywhere, {[round(float(g), 4) for g in grad.reshape(-1)[:4]]}): the "
            f"optimizer moves it {direction} at every step and the loss falls without bound by shrinking it, not "
            "by fitting the data",
            evidence={"elements": param.numel(), "gradient": [float(g) for g in grad.reshape(-1)[:8]]},
            fix="add the term that bounds it (uncertainty weighting: exp(-s) * loss + s), normalise the weights "
            "(softmax, or renormalise after each step), or do not train them",
            where=where if where[0] is not None else None,
        )


def _one_sign(grad: torch.Tensor) -> bool:
    g = grad.detach()
    return bool((g > 0).all()) or bool((g < 0).all())
