"""Checks that every optimizer, clip and schedule of the program acts on the step it was written for (issue 32):
a gradient clip that runs where no backward since the last step has filled the gradients (after ``step()`` or
before ``backward()``: it clips gradients that are already applied or about to be overwritten); an optimizer
that is zeroed every iteration and whose parameters get gradients, yet never steps (a GAN's discriminator
update that calls the other optimizer's ``step`` or none); a scheduler that steps an optimizer that never
steps while another one trains (the optimizer was rebuilt and the scheduler left on the old one). Each finding
names the line that caused it: the clip call, the backward whose gradients are thrown away, the rebuilt
optimizer."""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.provenance import graph_leaves
from expkit.doctor.findings import argument_made_at, construction_stack, raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.findings import RawStack
    from expkit.doctor.probe import BackwardEvent, CallEvent, Probe

MIN_ZERO_GRADS = 2  # zero_grad calls on an optimizer in the watch that show the program manages it every iteration


def _where(stack: RawStack | None) -> tuple[str | None, int | None] | None:
    file, line = user_line_of(stack)
    return None if file is None else (file, line)


def _inner(opt: Any) -> Any:
    """The optimizer that really steps: accelerate's AcceleratedOptimizer and Lightning's LightningOptimizer
    wrap one (``.optimizer``, ``._optimizer``)."""
    for attr in ("optimizer", "_optimizer"):
        inner = getattr(opt, attr, None)
        if isinstance(inner, torch.optim.Optimizer):
            return inner
    return opt


@register
class ClipNotApplied(Check):
    """``clip_grad_norm_`` (or ``clip_grad_value_``) called when no backward has run since the last optimizer step,
    followed by a backward before the next step: the clip scaled gradients that were already applied (clip after
    ``step()``) or that ``zero_grad`` cleared (clip before ``backward()``); the step uses the unclipped gradients."""

    name = "clip_not_applied"

    def __init__(self) -> None:
        self.pending: tuple[RawStack, float | None, str] | None = None

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name not in ("clip_grad_norm_", "clip_grad_value_"):
            return
        max_norm = ev.args[1] if len(ev.args) > 1 else ev.kwargs.get("max_norm", ev.kwargs.get("clip_value"))
        if isinstance(max_norm, (int, float)) and math.isinf(max_norm):
            return  # max_norm=inf measures the norm, it clips nothing
        if probe.backwards_since_step == 0:
            norm = float(ev.result) if isinstance(ev.result, torch.Tensor) and ev.result.numel() == 1 else None
            self.pending = (raw_stack(3), norm, ev.name)
        else:
            self.pending = None
            if ev.name == "clip_grad_norm_" and isinstance(ev.result, torch.Tensor) and float(ev.result) == 0.0:
                self._clipped_nothing(probe, ev)

    def _clipped_nothing(self, probe: Probe, ev: CallEvent) -> None:
        """After a backward, the clip measured a norm of 0 while the optimizers' parameters hold gradients: it was
        given no parameter that has one (an iterator the optimizer already used up, another model's parameters).
        Names the line that made the iterable it was given, else the clip."""
        live = [
            p
            for opt in list(probe.optimizers)
            for g in opt.param_groups
            for p in g["params"]
            if p.grad is not None and bool(p.grad.ne(0).any())
        ]
        if not live:
            return
        site = _where(raw_stack(4))
        made = argument_made_at(site[0], site[1], "parameters", position=0) if site is not None else None
        probe.report(
            kind="bug",
            check=self.name,
            message=f"clip_grad_norm_ measured a total norm of 0 while {len(live)} parameter(s) of the optimizers "
            "hold gradients: it was given none of them (an iterator such as filter(...) or model.parameters() "
            "that the optimizer already used up is empty the second time), so no step is ever clipped",
            evidence={"clip_norm": 0.0, "parameters_with_gradients": len(live)},
            fix="pass a list: params = [p for p in model.parameters() if p.requires_grad], used by both the "
            "optimizer and clip_grad_norm_",
            where=(site[0], made) if site is not None and made is not None else site,
        )

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if self.pending is None:
            return
        site, norm, name = self.pending
        self.pending = None
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{name} ran with no backward since the last optimizer step, and the next backward "
            "comes before the next step: it clipped gradients that were already applied or cleared, so no step "
            "is ever clipped",
            evidence={"grad_norm_at_clip": norm},
            fix="clip between loss.backward() and optimizer.step() (after scaler.unscale_ with AMP)",
            where=_where(site),
        )


@register
class OptimizerNeverSteps(Check):
    """An optimizer zeroed at every iteration whose parameters get gradients from a backward, that never steps
    while the watched optimizers take their steps: its model never changes (the update calls another optimizer's
    ``step()``, or none)."""

    name = "optimizer_never_steps"

    def __init__(self) -> None:
        self.zeroed: dict[int, tuple[Any, int]] = {}  # id(optimizer) -> (optimizer, zero_grad calls)
        self.reached: dict[int, RawStack] = {}  # id(leaf) -> the first backward that reached it

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "optimizer.zero_grad" and isinstance(ev.obj, torch.optim.Optimizer):
            opt = _inner(ev.obj)
            seen = self.zeroed.get(id(opt), (opt, 0))[1]
            self.zeroed[id(opt)] = (opt, seen + 1)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if not ev.tensor.requires_grad:
            return
        site = raw_stack(3)
        for i in graph_leaves(ev.tensor):
            self.reached.setdefault(i, site)

    def finish(self, probe: Probe) -> None:
        if probe.step < probe.watch_steps:
            return  # the watch did not run its course: an optimizer may step later
        for opt, calls in list(self.zeroed.values()):
            if calls < MIN_ZERO_GRADS or probe.steps_by_optimizer.get(id(opt), 0) > 0:
                continue
            params = [p for g in opt.param_groups for p in g["params"] if p.requires_grad]
            stepped = {
                id(p)
                for other in list(probe.optimizers)
                if probe.steps_by_optimizer.get(id(other), 0) > 0
                for g in other.param_groups
                for p in g["params"]
            }
            hit = [p for p in params if id(p) in self.reached]
            if not hit or all(id(p) in stepped for p in hit):
                continue  # another optimizer steps these very tensors (SAM's base optimizer over its groups)
            made = probe.made_at.get(id(opt))
            line = user_line_of(made[1])[1] if made else None
            probe.report(
                kind="bug",
                check=self.name,
                message=f"an optimizer over {len(params)} parameter tensor(s) is zeroed every iteration "
                f"({calls} times in the watch) and a backward gives {len(hit)} of them gradients, but it never "
                "steps while the others do: its model never changes",
                evidence={"zero_grad_calls": calls, "params_with_gradients": len(hit), "optimizer_line": line},
                fix="call this optimizer's step() after the backward that computes its loss (not another optimizer's)",
                where=_where(self.reached[id(hit[0])]),
            )


@register
class ScheduleOnIdleOptimizer(Check):
    """A scheduler that steps while the optimizer it sets never steps and another one trains: the optimizer was
    rebuilt (after unfreezing, after a resume) and the scheduler left on the old one, so the training
    optimizer's learning rate never follows the schedule."""

    name = "schedule_on_idle_optimizer"

    def __init__(self) -> None:
        self.stepped: dict[int, Any] = {}  # id(scheduler) -> scheduler, stepped in the watch

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "scheduler.step" and ev.obj is not None:
            self.stepped[id(ev.obj)] = ev.obj

    def finish(self, probe: Probe) -> None:
        if probe.step < probe.watch_steps:
            return
        training = [o for o in list(probe.optimizers) if probe.steps_by_optimizer.get(id(o), 0) > 0]
        for sched in self.stepped.values():
            held = getattr(sched, "optimizer", None)
            if held is None or probe.steps_by_optimizer.get(id(_inner(held)), 0) > 0 or not training:
                continue
            sched_at = probe.made_at.get(id(sched))
            # the optimizer that trains instead, when it was built after the scheduler: that line rebuilt it
            later = [
                probe.made_at[id(o)]
                for o in training
                if id(o) in probe.made_at and sched_at is not None and probe.made_at[id(o)][0] > sched_at[0]
            ]
            where = _where(min(later)[1]) if later else (_where(sched_at[1]) if sched_at else None)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{type(sched).__name__} steps an optimizer that never steps, while another optimizer "
                "trains: the schedule changes nothing (the optimizer was rebuilt and the scheduler left on the "
                "old one)",
                evidence={
                    "scheduler": type(sched).__name__,
                    "scheduled_lr": float(_inner(held).param_groups[0]["lr"]),
                    "training_lr": float(training[0].param_groups[0]["lr"]),
                },
                fix="build the scheduler on the optimizer that steps (rebuild it whenever the optimizer is rebuilt)",
                where=where,
            )


def state_discarded(new: Any, earlier: Any) -> int:
    """How many of ``new``'s parameters an ``earlier`` optimizer of the same class holds state for (Adam's moments,
    a momentum buffer, a step count): what building ``new`` over them throws away."""
    if earlier is new or type(earlier) is not type(new):
        return 0
    held = {id(p) for p, s in earlier.state.items() if s}
    return sum(id(p) in held for g in new.param_groups for p in g["params"])


@register
class OptimizerRebuilt(Check):
    """An optimizer built again at the line that built the one still in use, of the same class and over the same
    parameters, while the earlier one holds their state (moments, momentum buffers): an optimizer made inside the
    epoch or step loop, whose every rebuild throws that state away (and restarts Adam's bias correction).

    Measured at each construction (the earlier optimizer is still alive then: the name is rebound after the new
    one is built). A rebuild at another line (a fine-tuning phase) or over other parameters (a new model per fold)
    is not this bug. The doctor keeps watching constructions after the watch (``after_watch``), where a rebuild
    per epoch shows."""

    name = "optimizer_rebuilt"

    def __init__(self) -> None:
        self.built_at: list[tuple[weakref.ref[Any], tuple[str | None, int | None]]] = []

    def start(self, probe: Probe) -> None:
        check = self

        def make(original: Any) -> Any:
            def __init__(opt: Any, *args: Any, **kwargs: Any) -> None:
                original(opt, *args, **kwargs)
                try:
                    check.built(probe, opt, construction_stack(opt, 2))
                except Exception as exc:  # noqa: BLE001 - the doctor's own error never reaches the program
                    probe.check_failed(check.name, exc)

            return __init__

        probe.patch(torch.optim.Optimizer, "__init__", make)

    def built(self, probe: Probe, opt: Any, stack: RawStack) -> bool:
        """``opt`` was just built at ``stack``: report it when it rebuilds a live optimizer made at that line."""
        where = user_line_of(stack)
        self.built_at = [(ref, at) for ref, at in self.built_at if ref() is not None]
        earlier = (o for ref, at in self.built_at if at == where and (o := ref()) is not None)
        rebuilt, held = next(((o, n) for o in earlier if (n := state_discarded(opt, o))), (None, 0))
        self.built_at.append((weakref.ref(opt), where))
        if rebuilt is None or where[0] is None:
            return False
        keys = sorted({k for s in rebuilt.state.values() for k in s})
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(opt).__name__} built again at this line over {held} parameter(s) whose state the one "
            f"built here before holds ({', '.join(keys[:4])}): each rebuild throws that state away (an optimizer "
            "made inside the epoch or step loop)",
            evidence={"optimizer": type(opt).__name__, "params_with_state": held, "state": keys[:6]},
            fix="build the optimizer once, before the loop; to change the learning rate, set each param_group's "
            "'lr' or use a scheduler",
            where=where,
        )
        return True
