"""Gradients a backward computed that no step ever used: they were cleared (``zero_grad``, ``model.zero_grad``,
``p.grad = None``) before any optimizer stepped and before the parameters changed, and another backward filled
them again before the step, so the step used only the last backward(s) of its window (``zero_grad`` inside the
micro-batch loop of a gradient accumulation)."""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.provenance import graph_leaves
from expkit.doctor.findings import raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.findings import RawStack
    from expkit.doctor.probe import BackwardEvent, Probe, StepEvent

MIN_DISCARDED_IN_WINDOW = 2  # backwards thrown away in one step's window: the loop does it by design
MIN_WINDOWS = 2  # or windows (steps) in which one backward was thrown away: it happens every step


@dataclass
class _Fill:
    backward: int  # the backward (its sequence number) that put a gradient into the parameter
    version: int  # the parameter's version counter then (an in-place update bumps it)
    total: torch.Tensor  # the parameter's sum then (a ``.data`` update does not bump the version)


def _fingerprint(p: torch.Tensor) -> torch.Tensor:
    return p.detach().sum(dtype=torch.float64)


@register
class GradientsDiscarded(Check):
    """A backward's gradients on an optimizer's parameters were cleared before any step used them and refilled by
    another backward: the step used only the last backward(s) of its window.

    A tensor hook on each optimizer parameter sees every backward reach it; when a backward finds the gradient
    cleared (None, or zeroed by ``zero_grad``) although an earlier backward filled it since the last optimizer
    step (of any optimizer) and the parameter has not changed since (a SAM-style two-pass step changes it), that
    earlier backward's gradient was thrown away. Backwards that also reach a tensor that is not a parameter (an
    adversarial input's gradient) serve another purpose and are not counted; neither are backwards inside a step
    (a closure) nor a step whose gradients are not the backward's own (assigned by gradient surgery). Reported when
    it happens to >= 2 backwards of one window or in >= 2 windows; the finding names the ``zero_grad`` call.
    """

    name = "gradients_discarded"

    def __init__(self) -> None:
        self.hooked: set[int] = set()
        self.handles: list[Any] = []
        self.seq = 0  # backwards seen
        self.other_purpose: set[int] = set()  # backwards that also fill a non-parameter leaf
        self.backward_sites: dict[int, RawStack] = {}
        self.fills: dict[int, _Fill] = {}  # id(param) -> the fill not yet used by a step
        self.clear_sites: dict[int, RawStack] = {}  # id(param) -> the zero_grad that cleared its pending fill
        self.after_fill: dict[int, Any] = {}  # id(param) -> weakref to the .grad the last backward left
        # id(param) -> {discarded backward: (clear site, refilling backward)} in the current window
        self.discarded: dict[int, dict[int, tuple[RawStack | None, int]]] = {}
        self.windows: dict[int, int] = {}  # id(optimizer) -> windows with one discarded backward
        self.stepping = 0  # inside an optimizer's step (a closure's backwards are the step's own)
        self.reported: set[int] = set()

    # ---- zero_grad -------------------------------------------------------------------------------
    def start(self, probe: Probe) -> None:
        check = self

        def make(original: Any) -> Any:
            def zero_grad(obj: Any, *args: Any, **kwargs: Any) -> Any:
                if probe.active and check.fills:
                    with contextlib.suppress(Exception):  # bookkeeping must never break the user's zero_grad
                        check._note_clear(obj)
                return original(obj, *args, **kwargs)

            zero_grad.__wrapped__ = original  # type: ignore[attr-defined]
            return zero_grad

        probe.patch(torch.optim.Optimizer, "zero_grad", make)
        probe.patch(nn.Module, "zero_grad", make)

    def _note_clear(self, obj: Any) -> None:
        if isinstance(obj, nn.Module):
            params = list(obj.parameters())
        elif isinstance(obj, torch.optim.Optimizer):
            params = [p for g in obj.param_groups for p in g["params"]]
        else:
            return
        site: RawStack | None = None
        for p in params:
            if id(p) in self.fills and p.grad is not None:
                site = site or raw_stack(3)
                self.clear_sites[id(p)] = site

    # ---- backwards -------------------------------------------------------------------------------
    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        self.seq += 1
        if self.stepping:
            return
        held = probe.optimizer_param_ids()
        for opt in list(probe.optimizers):
            for g in opt.param_groups:
                for p in g["params"]:
                    if id(p) not in self.hooked and isinstance(p, torch.Tensor) and p.requires_grad and p.is_leaf:
                        self.hooked.add(id(p))
                        self.handles.append(p.register_hook(self._pre_hook(p)))
                        if hasattr(p, "register_post_accumulate_grad_hook"):
                            self.handles.append(p.register_post_accumulate_grad_hook(self._post_hook))
        if ev.tensor.requires_grad:
            leaves = graph_leaves(ev.tensor)
            if any(i not in held and not isinstance(t, nn.Parameter) for i, t in leaves.items()):
                self.other_purpose.add(self.seq)
        self.backward_sites[self.seq] = raw_stack(3)

    def _pre_hook(self, p: torch.Tensor) -> Any:
        ref = weakref.ref(p)

        def hook(grad: torch.Tensor) -> None:
            param = ref()
            if param is None or self.stepping:
                return
            with contextlib.suppress(Exception):  # a hook runs inside the user's backward: it must never raise
                self._seen(param)

        return hook

    def _seen(self, param: torch.Tensor) -> None:
        """A backward is about to add its gradient into ``param.grad``."""
        key = id(param)
        fill = self.fills.get(key)
        cleared = param.grad is None or key in self.clear_sites
        if fill is not None and cleared and fill.backward != self.seq:
            unchanged = param._version == fill.version and bool(_fingerprint(param) == fill.total)
            if unchanged and fill.backward not in self.other_purpose:
                site = self.clear_sites.get(key)
                self.discarded.setdefault(key, {})[fill.backward] = (site, self.seq)
        self.clear_sites.pop(key, None)
        if fill is None or fill.backward != self.seq:
            self.fills[key] = _Fill(self.seq, param._version, _fingerprint(param))

    def _post_hook(self, param: torch.Tensor) -> None:
        if param.grad is not None and not self.stepping:
            with contextlib.suppress(Exception):
                self.after_fill[id(param)] = weakref.ref(param.grad)

    # ---- steps -----------------------------------------------------------------------------------
    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        self.stepping += 1
        key = id(ev.optimizer)
        if key in self.reported:
            return
        lost: dict[int, tuple[RawStack | None, int]] = {}
        own = 0
        for p in ev.params:
            found = self.discarded.get(id(p))
            if not found:
                continue
            ref = self.after_fill.get(id(p))
            if ref is not None and ref() is not p.grad:
                return  # the step's gradient is not what the backwards left (assigned: gradient surgery)
            own += 1
            for b, v in found.items():
                lost.setdefault(b, v)
        if not lost:
            return
        if len(lost) < MIN_DISCARDED_IN_WINDOW:
            self.windows[key] = self.windows.get(key, 0) + 1
            if self.windows[key] < MIN_WINDOWS:
                return
        self.reported.add(key)
        sites = [s for s, _ in lost.values() if s is not None]
        clear = user_line_of(sites[-1]) if sites else (None, None)
        refill = user_line_of(self.backward_sites.get(max(r for _, r in lost.values())))
        where = clear if clear[0] is not None else refill
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"{len(lost)} backward(s) in this step's window filled the gradients of {own} parameter tensor(s) "
                "and were cleared before any step used them, then another backward filled them again: the step "
                "used only the last backward(s) of its window (zero_grad runs inside the accumulation loop)"
            ),
            evidence={
                "discarded_backwards": len(lost),
                "backwards_in_window": probe.backwards_since_step,
                "params": own,
                "optimizer_step": ev.index,
                "clear_line": clear[1],
                "refill_backward_line": refill[1],
            },
            fix="clear the gradients once per step (zero_grad right after optimizer.step()), not before every "
            "backward of an accumulation window",
            where=where if where[0] is not None else None,
        )

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.stepping = max(0, self.stepping - 1)
        for p in ev.params:
            self.discarded.pop(id(p), None)
        self.fills.clear()  # every pending gradient was used (or could have been) by a step
        self.clear_sites.clear()

    def finish(self, probe: Probe) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []
