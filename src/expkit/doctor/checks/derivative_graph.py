"""A derivative taken without ``create_graph`` and trained on (issue 32): a PINN's ``du/dx =
torch.autograd.grad(u, x, ...)[0]`` without ``create_graph=True`` is a constant. A residual built from it
(``du_dx + k * u``) trains only its other terms: the loss falls, the physics term never shapes the network.

Measured on the run: each ``torch.autograd.grad`` call without ``create_graph`` of outputs that reach an
optimizer's parameters, taken with respect to tensors that are not parameters (a network's inputs), is followed
through the user's ops (values computed from it without gradient stay followed) until an op, outside any module's
forward and with grad enabled, combines it with a tensor that carries a graph (the network's output): the loss
is then built from a derivative that no gradient flows through. An adversarial example (the input's gradient fed
back to the model as data) goes into a module as input and is not such a combination; a gradient with respect to
the parameters (a hand-written update, SAM, first-order MAML) is not judged."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import FirstUserOp, _tensors, close_mode
from expkit.doctor.checks.provenance import graph_leaves
from expkit.doctor.findings import RawStack, raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import CallEvent, Probe, StepEvent

MAX_FOLLOWED = 256  # tensors followed from the derivatives at once


class _Followed(FirstUserOp):
    """The derivatives' descendants; the first user op that combines one with a graph-carrying tensor."""

    def __init__(self, probe: Probe) -> None:
        super().__init__()
        self.probe = probe
        self.followed: dict[int, tuple[weakref.ref[torch.Tensor], RawStack]] = {}

    def follow(self, t: torch.Tensor, site: RawStack) -> None:
        if len(self.followed) < MAX_FOLLOWED:
            self.followed[id(t)] = (weakref.ref(t), site)

    def _site(self, t: torch.Tensor) -> RawStack | None:
        rec = self.followed.get(id(t))
        return rec[1] if rec is not None and rec[0]() is t else None

    def match(self, func: Any, args: tuple[Any, ...], out: Any) -> Any:
        if self.probe._in_check or not self.followed:
            return None
        ins = _tensors(args)
        sites = [s for s in (self._site(t) for t in ins) if s is not None]
        if not sites:
            return None
        outs = _tensors(out)
        if not any(o.requires_grad for o in outs):
            for o in outs:  # computed from the derivative without a graph: still the derivative's value
                self.follow(o, sites[0])
            return None
        if self.probe._depth > 0 or not torch.is_grad_enabled():
            return None  # inside a model's forward: the derivative is the model's input (an adversarial example)
        carried = [t for t in ins if t.requires_grad and t.grad_fn is not None]
        return sites[0] if carried else None


@register
class DerivativeWithoutGraph(Check):
    """A ``torch.autograd.grad`` result taken without ``create_graph`` and combined into the loss with the
    network's output: the derivative is a constant, the loss term built on it trains nothing through it."""

    name = "derivative_without_graph"

    def __init__(self) -> None:
        self.mode: _Followed | None = None
        self.reported = False

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name != "autograd_grad" or self.reported or len(ev.args) < 2:
            return
        self._taken(probe, ev.args[0], ev.args[1], ev.args[2:], ev.kwargs, ev.result)

    def _taken(self, probe: Probe, outputs: Any, inputs: Any, args: Any, kwargs: Any, result: Any) -> None:
        create = kwargs.get("create_graph", args[2] if len(args) > 2 else False)
        if create:
            return
        held = probe.optimizer_param_ids()
        if not held:
            return
        ins = _tensors(inputs)
        if not ins or any(id(t) in held for t in ins):
            return  # a gradient with respect to the parameters: an update written by hand
        reached = {i for o in _tensors(outputs) if o.grad_fn is not None for i in graph_leaves(o)}
        if not reached & held:
            return
        if self.mode is None:
            self.mode = _Followed(probe)
            self.mode.__enter__()
        site = raw_stack(2)  # the dispatch's frames are expkit's: user_line_of names the program's call
        for r in _tensors(result):
            self.mode.follow(r, site)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        mode = self.mode
        if mode is None or mode.found is None or self.reported:
            return
        self.reported = True
        probe.report(
            kind="bug",
            check=self.name,
            message="a derivative taken with torch.autograd.grad without create_graph=True is combined with the "
            "network's output into the loss: it is a constant, so the loss term built on it (a PDE residual, a "
            "gradient penalty) sends no gradient through the derivative and trains only its other terms",
            evidence={"combined_at_line": mode.line[1] if mode.line else None},
            fix="take the derivative with torch.autograd.grad(..., create_graph=True) so the loss can be "
            "differentiated through it",
            where=user_line_of(mode.found[1]),
        )

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        if self.mode is not None:
            self.mode.followed.clear()  # each step takes its derivatives anew

    def finish(self, probe: Probe) -> None:
        if self.mode is not None:
            close_mode(self.mode)
            self.mode = None
