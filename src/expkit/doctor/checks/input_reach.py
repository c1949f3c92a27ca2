"""Does the model read its input? The first training forward of each model after an optimizer step is replayed (no
grad, the same random state) with one sample's input changed: that sample's own output must change. Changed whole,
an output that stays put means the model ignores its input (a forward that returns a stored tensor, a dropout of 1,
an input multiplied by zeros); changed everywhere but its first position (token ids, sequences, feature columns) it
means the model reads only that position (the state at ``out[:, 0]`` of a left-to-right LSTM, the first token of a
causal transformer as the "CLS" pooling). The last op of the user's code that took the changed data and gave back an
unchanged output, where the information ends, names the line. The forward before the first step is not the one
judged: a zero-initialised model (a logistic regression) reads nothing until its first update."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import _changed, _first, _Replay
from expkit.doctor.findings import user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe

Place = tuple[str | None, int | None]


def _real_positions(x: torch.Tensor, kwargs: dict[str, Any]) -> torch.Tensor:
    """Sample 0's positions along axis 1 that hold real content: the attended ones when an ``attention_mask``
    was given, else all but a trailing run (2+) of one token id (padding)."""
    n = x.shape[1]
    real = torch.ones(n, dtype=torch.bool)
    mask = kwargs.get("attention_mask")
    if isinstance(mask, torch.Tensor) and mask.dim() == 2 and tuple(mask.shape) == tuple(x.shape[:2]):
        return mask[0].to(torch.bool).cpu()
    if not x.is_floating_point() and x.dim() == 2:
        row = x[0].cpu()
        run = 1
        while run < n and bool(row[n - 1 - run] == row[-1]):
            run += 1
        if run >= 2:
            real[n - run :] = False
    return real


def _changed_sample(x: torch.Tensor, keep_first: bool, kwargs: dict[str, Any]) -> torch.Tensor | None:
    """``x`` with sample 0 changed: whole, or at its real positions after the first. Token ids become other ids
    seen in the batch (never a permutation of the row's own: a bag of words is order-blind by design)."""
    changed = x.clone()
    if keep_first:
        where = _real_positions(x, kwargs)
        where[0] = False
        if not bool(where.any()):
            return None
    else:
        where = torch.ones(x.shape[1] if x.dim() > 1 else 1, dtype=torch.bool)
    with torch.random.fork_rng(devices=[]):
        if x.is_floating_point():
            noise = torch.randn_like(x[0]) * (x.std() + 1) + x.mean()
            if x.dim() == 1:
                changed[0] = noise
            else:
                changed[0, where.to(x.device)] = noise[where.to(x.device)]
            return changed
    ids = torch.unique(x)
    if ids.numel() < 2:
        return None
    nxt = ids[(torch.searchsorted(ids, x[0]) + 1) % ids.numel()]  # each id becomes the next id seen in the batch
    if x.dim() == 1:
        changed[0] = nxt
    else:
        changed[0, where.to(x.device)] = nxt[where.to(x.device)]
    return changed if bool((changed != x).any()) else None


def _sample0_differs(n: int) -> Any:
    def differs(p: torch.Tensor, q: torch.Tensor) -> bool:
        return p.dim() >= 1 and p.shape[0] == n and p.is_floating_point() and _changed(p[:1], q[:1])

    return differs


def _where_it_ends(
    a: list[tuple[str, Any, list[torch.Tensor], torch.Tensor | None, Any]],
    b: list[tuple[str, Any, list[torch.Tensor], torch.Tensor | None, Any]],
    differs: Any,
) -> Place | None:
    """The last op of the user's code (or layer call) in two replays that took sample 0's changed data and gave
    the same output for it: where the information ends."""
    last: Place | None = None
    for (kind, what, ins_a, oa, site), (_, _, ins_b, ob, _) in zip(a, b, strict=False):
        if oa is None or ob is None or oa.shape != ob.shape:
            continue
        if any(p.shape == q.shape and differs(p, q) for p, q in zip(ins_a, ins_b, strict=False)) and not differs(
            oa, ob
        ):
            place = what if kind == "op" else user_line_of(site)
            if place[0] is not None:
                last = place
    return last


@register
class InputIgnored(Check):
    """The first training forward of each model after a step, replayed with sample 0's input changed, whole and
    then everywhere but its first position: sample 0's output must change."""

    name = "input_ignored"

    def __init__(self) -> None:
        self.tested: set[int] = set()
        self.first_seen: dict[int, int] = {}  # id(model) -> the step count at its first training forward

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not (ev.training and ev.grad_enabled) or id(ev.module) in self.tested:
            return
        if self.first_seen.setdefault(id(ev.module), probe.step) == probe.step:
            return  # not stepped since its first forward: a zero initialisation reads nothing yet
        key = None
        if ev.inputs and isinstance(ev.inputs[0], torch.Tensor):
            x = ev.inputs[0]
        elif not ev.inputs and isinstance(ev.kwargs.get("input_ids"), torch.Tensor):
            x, key = ev.kwargs["input_ids"], "input_ids"
        else:
            return
        self.tested.add(id(ev.module))
        x = x.detach()  # no op of the check may join the program's graph (a non-reentrant checkpoint counts them)
        out = _first(ev.output)
        if x.dim() < 1 or x.shape[0] < 2 or out is None or not out.is_floating_point():
            return
        if out.dim() < 1 or out.shape[0] != x.shape[0] or getattr(ev.module, "batch_first", None) is False:
            return
        replay = _Replay(ev.module, ev.kwargs)

        def run(t: torch.Tensor, record: bool = False) -> torch.Tensor | None:
            if key is None:
                o, _ = replay((t, *ev.inputs[1:]), record_ops=record)
            else:
                replay.kwargs = {**ev.kwargs, key: t}
                o, _ = replay((), record_ops=record)
            return o

        base = run(x)
        if base is None or not bool(torch.isfinite(base).all()):
            return  # NaN weights (nonfinite_gradient's) read nothing; that is not this check's finding
        differs = _sample0_differs(x.shape[0])
        for keep_first in (False, True):
            if keep_first and (x.dim() < 2 or x.shape[1] < 2):
                return
            changed = _changed_sample(x, keep_first, ev.kwargs)
            if changed is None:
                continue
            other = run(changed)
            if other is None or base.shape != other.shape:
                return
            if differs(base, other):
                continue
            run(x, record=True)
            ea = replay.events
            run(changed, record=True)
            where = _where_it_ends(ea, replay.events, differs)
            self._report(probe, ev, keep_first, x, where)
            return

    def _report(self, probe: Probe, ev: ForwardEvent, keep_first: bool, x: torch.Tensor, where: Place | None) -> None:
        name = type(ev.module).__name__
        if keep_first:
            message = (
                f"{name}'s output for a sample stays the same when everything but its first position (axis 1 of "
                f"its {tuple(x.shape)} input) changes: the model reads only position 0 (out[:, 0] of a "
                "left-to-right RNN, the first token of a causal model used as its summary)"
            )
            fix = "summarise the sequence where it has seen everything: the last real step of a forward RNN, the "
            fix += "last real token of a causal model, or a pooling over the real positions"
        else:
            message = (
                f"{name}'s output for a sample stays the same when that sample's whole input changes: the model "
                "does not read its input (a stored tensor returned, the input zeroed or dropped on the way)"
            )
            fix = "make the forward compute from its argument; check every layer between the input and the output"
        probe.report(
            kind="bug",
            check=self.name,
            message=message,
            evidence={"input_shape": list(x.shape), "changed": "after position 0" if keep_first else "whole sample"},
            fix=fix,
            where=where,
        )
