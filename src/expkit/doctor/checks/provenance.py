"""Checks that follow the autograd graph and where things were made (issue 32): every tensor that requires grad
and reaches the loss is updated by some optimizer (registered parameter or not); trainable parameters of modules
that ran get a gradient (a ``no_grad``/``detach``/``.item()`` in the forward cuts them off); each parameter is held
once. Each finding names the line that caused it (the list assignment, the module's call site, the ``no_grad``,
the ``detach``, the optimizer's construction) and the step where it showed."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import RawStack, init_attribute_line, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, ForwardEvent, Probe, StepEvent

MAX_GRAPH_NODES = 200_000  # a bound on the graph walk of one backward


def graph_leaves(tensor: torch.Tensor) -> dict[int, torch.Tensor]:
    """Every leaf tensor that requires grad and that ``tensor``'s autograd graph reaches (the variables of
    its AccumulateGrad nodes), by id."""
    return node_leaves(tensor.grad_fn)


def node_leaves(start: Any) -> dict[int, torch.Tensor]:
    """:func:`graph_leaves` from an autograd node."""
    leaves: dict[int, torch.Tensor] = {}
    if start is None:
        return leaves
    seen = {start}
    todo = [start]
    while todo and len(seen) < MAX_GRAPH_NODES:
        node = todo.pop()
        var = getattr(node, "variable", None)
        if isinstance(var, torch.Tensor):
            leaves[id(var)] = var
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return leaves


_GRAD_OFF_BY_TORCH = ("torch/utils/checkpoint.py", "torch/autograd/function.py")


def _outside_autograd_function(stack: RawStack | None) -> RawStack | None:
    """A stack cut to the frames outside the outermost autograd Function torch ran it in (reentrant
    checkpointing runs its function with grad disabled): the user's call of ``checkpoint(...)``, not the layer
    inside it; the stack as it was when no such frame is on it."""
    if not stack:
        return stack
    inside = [i for i, (path, _) in enumerate(stack) if path.replace("\\", "/").endswith(_GRAD_OFF_BY_TORCH)]
    return stack[max(inside) + 1 :] if inside else stack


def _where(stack: RawStack | None) -> tuple[str | None, int | None] | None:
    file, line = user_line_of(stack)
    return None if file is None else (file, line)


def _origin(probe: Probe, t: torch.Tensor) -> tuple[str | None, int | None] | None:
    """Where an unregistered trainable tensor came from: its own assignment, its module's assignment (a plain
    list attribute), or the line that called its module."""
    for key in (id(t), id(probe.owner[id(t)]) if id(t) in probe.owner else None):
        if key is not None and key in probe.origins:
            return _where(probe.origins[key][1])
    owner = probe.owner.get(id(t))
    if owner is not None and id(owner) in probe.made_at:
        return _where(probe.made_at[id(owner)][1])
    return _where(probe.call_sites.get(id(owner))) if owner is not None else None


def _parting_frame(first: RawStack, second: RawStack) -> tuple[str | None, int | None] | None:
    """The frame of ``second`` where it parts from ``first`` (both read from the outermost frame), when both
    frames there are the user's code in one file: the statement in ``first``'s scope that led to ``second``."""
    for a, b in zip(reversed(first), reversed(second), strict=False):
        if a == b:
            continue
        if a[0] != b[0]:
            return None
        return _where((b,))
    return None


def replaced_after_optimizer(probe: Probe, tensors: list[torch.Tensor]) -> tuple[str | None, int | None] | None:
    """The line that assigned one of ``tensors`` to a module attribute after the first optimizer was built
    (``model.bias.weight = nn.Parameter(...)``: the optimizer holds the Parameter it replaced), else None."""
    first_opt = min((probe.made_at[id(o)][0] for o in list(probe.optimizers) if id(o) in probe.made_at), default=None)
    if first_opt is None:
        return None
    holders = {id(p): m for root in list(probe.roots.values()) for m in root.modules() for p in m._parameters.values()}
    for t in tensors:
        rec, holder = probe.origins.get(id(t)), holders.get(id(t))
        built = probe.made_at.get(id(holder)) if holder is not None else None
        # set on a module built before the optimizer (a module built after it sets its own parameters too)
        if rec is not None and rec[0] > first_opt and built is not None and built[0] < first_opt:
            return _where(rec[1])
    return None


def _registered_ids(probe: Probe) -> dict[int, Any]:
    """Parameters of the top-level modules that ran in training, by id -> (root, name), and of the LightningModule
    being fitted (its ``training_step`` may call only its submodules: a loss weight it holds itself is registered)."""
    from expkit.doctor.checks.lr_schedule import lightning_module

    roots = list(probe.roots.values())
    fitting = lightning_module()
    if fitting is not None:
        roots.append(fitting)
    return {id(p): (root, n) for root in roots for n, p in root.named_parameters()}


def _held_in_container(module: Any, owner: Any) -> tuple[str | None, int | None] | None:
    """The ``self.<name> = ...`` line of ``type(module).__init__`` for the plain dict or list attribute that
    holds ``owner`` (a module kept outside the module tree)."""
    for name, value in vars(module).items():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(v is owner for v in items):
            line = init_attribute_line(type(module), name)
            return line if line[0] is not None else None
    return None


@register
class TrainableNotUpdated(Check):
    """A tensor that requires grad reaches the loss and gets a gradient, yet no optimizer of the program holds
    it: layers kept in a plain list, a tensor attribute that is not an ``nn.Parameter``, a layer built inside
    ``forward``, a head swapped in after the optimizer was built, an optimizer built over part of the model."""

    name = "trainable_not_updated"

    def __init__(self) -> None:
        self.inputs: dict[int, torch.Tensor] = {}  # leaves given to a top-level forward: data, not weights
        self.reported: set[int] = set()  # ids of the model's tensors already reported
        self.graphs: list[dict[int, torch.Tensor]] = []  # the leaves of each backward since the last step

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        # a tensor the program feeds to its model is an input even when it requires grad (the interpolates of a
        # gradient penalty, an adversarial example): its gradient is meant for autograd.grad, not an optimizer
        for x in (*ev.inputs, *ev.kwargs.values()):
            if isinstance(x, torch.Tensor) and x.requires_grad and x.grad_fn is None:
                self.inputs[id(x)] = x

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        # the variables of torch.autograd.grad (a PINN's collocation points, whose derivatives the loss takes)
        # are inputs too, even when a later backward reaches them
        if ev.name != "autograd_grad":
            return
        given = ev.kwargs.get("inputs", ev.args[1] if len(ev.args) > 1 else ())
        for x in (given,) if isinstance(given, torch.Tensor) else given or ():
            if isinstance(x, torch.Tensor) and x.requires_grad and x.grad_fn is None:
                self.inputs[id(x)] = x

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if ev.tensor.requires_grad:
            self.graphs.append(graph_leaves(ev.tensor))

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        if self.graphs:  # a closure optimizer (Lightning): the backward ran inside step()
            self.judge(probe, ev)
        self.graphs = []
        self.inputs = {}

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.graphs:
            self.judge(probe, ev)
            self.graphs = []

    def judge(self, probe: Probe, ev: StepEvent) -> None:
        held = probe.optimizer_param_ids()
        registered = _registered_ids(probe)
        # a backward that reaches no tensor an optimizer holds or a module registers trains nothing: a hand
        # check of a custom autograd Function's gradient, a saliency map on an input; its leaves are not weights
        trains = [g for g in self.graphs if any(i in held or i in registered for i in g)]
        leaves = {i: t for g in trains for i, t in g.items()}
        stray = [
            t
            for i, t in leaves.items()
            if i not in held
            and i not in self.inputs
            and i not in probe.leaf_outputs
            and t.grad is not None
            and t.requires_grad
        ]
        if not stray:
            return
        loose = [t for t in stray if id(t) not in registered]
        if loose:
            where = next((w for w in (_origin(probe, t) for t in loose) if w is not None), None)
            self._report(probe, loose, "are not registered with any module (a plain list or attribute)", where)
        kept = [t for t in stray if id(t) in registered and id(t) not in self.reported]
        self.reported.update(id(t) for t in kept)  # once: a GAN's second backward reaches them again
        if kept:
            why = self._why_kept(probe, kept, ev.optimizer)
            self._report(probe, kept, "belong to the model but no optimizer holds them", why)

    def _why_kept(
        self, probe: Probe, kept: list[torch.Tensor], stepping: torch.optim.Optimizer
    ) -> tuple[str | None, int | None] | None:
        """A module the fitting LightningModule holds outside its module tree (a plain dict of heads called in
        training_step), where it was built; a module assigned after the optimizer was built (a swapped head);
        else the line that built the optimizer stepping now (the one the backward that reached them was for: a
        GAN's discriminator optimizer, not the generator's built after it), else the last optimizer's line."""
        from expkit.doctor.checks.lr_schedule import configure_optimizers_return, lightning_module

        module = lightning_module()
        if module is not None:
            tree = {id(p) for p in module.parameters()}
            for t in kept:
                owner = probe.owner.get(id(t)) or next(
                    (r for r in list(probe.roots.values()) if any(p is t for p in r.parameters())), None
                )
                if id(t) in tree or owner is None:
                    continue
                if id(owner) in probe.made_at:
                    return _where(probe.made_at[id(owner)][1])
                held = _held_in_container(module, owner)  # built before the watch: the attribute's line
                if held is not None:
                    return held
        replaced = replaced_after_optimizer(probe, kept)
        if replaced is not None:
            return replaced
        first_opt = min((probe.made_at[id(o)][0] for o in list(probe.optimizers) if id(o) in probe.made_at), default=0)
        for root in list(probe.roots.values()):
            for mod in root.modules():
                rec = probe.origins.get(id(mod))
                own = {id(p) for p in mod.parameters()}
                if rec and rec[0] > first_opt and any(id(t) in own for t in kept):
                    return _where(rec[1])
        made = [probe.made_at[id(o)] for o in list(probe.optimizers) if id(o) in probe.made_at]
        if not made:
            return configure_optimizers_return(module) if module is not None else None
        # a model built after the optimizer (rebuilt for a new run): the statement, in the optimizer's own
        # scope, that built it (the two construction stacks, aligned from the outermost frame, part there)
        last_opt = max(made)
        for root in list(probe.roots.values()):
            rec = probe.made_at.get(id(root))
            if rec and rec[0] > last_opt[0] and any(id(t) in {id(p) for p in root.parameters()} for t in kept):
                parted = _parting_frame(last_opt[1], rec[1])
                if parted is not None:
                    return parted
        stepping_made = probe.made_at.get(id(stepping))
        return _where((stepping_made or last_opt)[1])

    def _report(self, probe: Probe, ts: list[torch.Tensor], why: str, where: Any) -> None:
        values = sum(t.numel() for t in ts)
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"{len(ts)} tensor(s) ({values:,} values) reach the loss and get gradients but {why}: "
                "no optimizer updates them, they never change"
            ),
            evidence={"tensors": len(ts), "values": values, "shapes": [list(t.shape) for t in ts[:4]]},
            fix="register them (nn.ModuleList / nn.ParameterList / nn.Parameter, layers built in __init__) and "
            "build the optimizer after the model is final, from model.parameters()",
            where=where,
        )


@register
class GradientCut(Check):
    """Trainable parameters of the stepping optimizer, in modules that ran since the last step, with no gradient:
    the module ran under ``no_grad``, or its output was detached (``detach``, ``.item()``, NumPy) before the loss.
    Names the ``no_grad`` or ``detach`` line."""

    name = "gradient_cut"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        self.judged = probe.backwards_since_step > 0
        if self.judged:
            self.judge(probe, ev)

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        if not getattr(self, "judged", True) and probe.backwards_since_step > 0:
            self.judge(probe, ev)  # a closure optimizer (Lightning): the backward ran inside step()

    def judge(self, probe: Probe, ev: StepEvent) -> None:
        if not any(p.grad is not None for p in ev.params):
            return
        held = {id(p) for p in ev.params if p.requires_grad and p.grad is None}
        if not held:
            return
        nograd: list[Any] = []
        detached: list[Any] = []
        # every module with parameters that ran since the last step, a top-level call under no_grad included (an
        # encoder called in the loop or in Lightning's training_step, outside any forward, is no root)
        for mod in probe.ran_modules.values():
            if not any(id(p) in held for p in mod.parameters(recurse=False)):
                continue
            # a module that also ran with grad (the training forward beside a validation under no_grad) was not
            # kept from its gradient by the no_grad
            without = id(mod) in probe.ran_without_grad and id(mod) not in probe.called_with_grad
            (nograd if without else detached).append(mod)
        if nograd:
            site = _outside_autograd_function(probe.ran_without_grad[id(nograd[0])])
            how = "ran with grad disabled (torch.no_grad(), or an autograd Function's forward: reentrant checkpointing)"
            self._report(probe, nograd, how, _where(site))
        if detached and probe.cut_sites:
            self._report(probe, detached, "feed the loss only through a detach()/.item()", _where(probe.cut_sites[0]))

    def _report(self, probe: Probe, mods: list[Any], how: str, where: Any) -> None:
        names = sorted({type(m).__name__ for m in mods})
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{len(mods)} trained module(s) ({', '.join(names)}) {how}: their weights get no gradient",
            evidence={"modules": len(mods)},
            fix="keep the graph between these modules and the loss (no torch.no_grad()/detach()/.item()/NumPy "
            "on the training path), or freeze them with requires_grad_(False) and leave them out of the optimizer",
            where=where,
        )


@register
class ParamsListedTwice(Check):
    """A parameter listed twice in one optimizer (a list concatenated with a part of itself): it is updated
    twice per step."""

    name = "params_listed_twice"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        # one optimizer at a time: a wrapper (accelerate's AcceleratedOptimizer) shows its inner one's groups
        counts = Counter(id(p) for g in ev.optimizer.param_groups for p in g["params"])
        twice = [i for i, k in counts.items() if k > 1]
        if not twice:
            return
        opt_at = probe.made_at.get(id(ev.optimizer))
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{len(twice)} parameter(s) are listed more than once in the optimizers: each is updated twice",
            evidence={"params_listed_twice": len(twice), "params": len(counts)},
            fix="build the parameter list once (set(...) or named_parameters() deduplicated)",
            where=_where(opt_at[1]) if opt_at else None,
        )
