"""A momentum (EMA) copy that follows only part of the model: MoCo's key encoder, BYOL's target, a mean teacher or
an EMA model is a copy of the trained weights that no optimizer holds and that the program moves towards them at
every step. Measured, not read from the update loop: at the first step, the parameters outside every optimizer
that equal a trained parameter (a ``deepcopy``) are paired with it; over the next step window, when some copies
moved while the trained weights moved and others stayed exactly where they were, the update loop leaves part of
the copy behind (a key head missing from the zipped parameter lists). A frozen copy (a DPO reference model, a
teacher kept at its initial weights) moves nowhere and is not flagged; neither is a copy that moves as a whole.

The same window measures the average's rate (``ema_decay_swapped``): the share of the way from its old value to
its trained twin that each copy moved in one step is ``1 - decay``. A copy that moved nearly all the way (at least
95 %, not exactly all: a hard target-network sync copies) keeps almost nothing of its history: ``decay`` and
``1 - decay`` are swapped in the update (levanter#883). The line that wrote into the copy in that window names it."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import FirstUserOp, close_mode

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe, StepEvent

MAX_PAIRED_ELEMENTS = 50_000_000  # copies of bigger models are not snapshot (the watch must stay light)
SWAPPED_RATE = 0.95  # a copy that moves this share of the way to its twin in one step keeps no history
COPY_RATE = 1 - 1e-4  # above this, the copy was synced (a hard target update), not averaged
MAX_LISTED = 4096  # a longer list of tensors is data (a dataset kept in a list), not one model's copies
AWAY_RATE = 1e-4  # a copy that moves this share of the way or more AWAY from its twin: the update's sign is wrong


class _CopyWrites(FirstUserOp):
    """Between the two steps of the window: the first user line whose in-place op wrote into a copy
    (``copy_``, ``mul_``, ``lerp_``, ``_foreach_*_`` on a list of them)."""

    def __init__(self, copies: set[int]) -> None:
        super().__init__()
        self.copies = copies  # data_ptr() of each copy

    def match(self, func: Any, args: tuple[Any, ...], out: Any) -> bool | None:
        if not args or not getattr(func, "__name__", "").endswith("_"):
            return None
        first = args[0]
        targets = first if isinstance(first, (list, tuple)) else (first,)
        try:  # recording must never break the program's op (a sparse or meta tensor has no data_ptr)
            written = any(isinstance(t, torch.Tensor) and t.data_ptr() in self.copies for t in targets)
        except RuntimeError:
            return None
        return True if written else None


@register
class EmaCopyPartial(Check):
    """Copies of the trained weights outside every optimizer: over one step window, some follow their trained
    twins and some, whose twins moved, do not move at all."""

    name = "ema_copy_partial"
    reports: ClassVar[dict[str, str]] = {
        "ema_decay_swapped": "An EMA copy moves nearly all the way to the trained weights each step (decay swapped).",
        "ema_buffers_stale": "An EMA copy follows the trained weights, but its batch-norm statistics never move.",
        "ema_moves_away": "An EMA copy moves away from the trained weights each step (the update's sign is wrong).",
    }

    def __init__(self) -> None:
        self.roots: dict[int, nn.Module] = {}
        self.pairs: list[tuple[nn.Module, str, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
        # (copy root, buffer name, its buffer, a snapshot, the trained model's buffer, a snapshot)
        self.buffers: list[tuple[nn.Module, str, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self.steps = 0
        self.done = False
        self.writes: _CopyWrites | None = None

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not self.done:
            self.roots.setdefault(id(ev.module), ev.module)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.done or probe.lead is None or probe.lead() is not ev.optimizer:
            return
        self.steps += 1
        if self.steps == 1:
            self._pair(probe)
        elif self.steps == 2:
            self.done = True
            self._close()
            self._judge(probe)

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        if self.steps == 1 and self.pairs and self.writes is None and not self.done:
            # by storage address: ``ema_p.data.mul_(d)`` writes through a new tensor object each time
            self.writes = _CopyWrites({c.data_ptr() for _, _, c, _, _, _ in self.pairs})
            self.writes.__enter__()

    def _close(self) -> None:
        mode = self.writes
        if mode is None or not mode.on:
            return
        close_mode(mode)

    def finish(self, probe: Probe) -> None:
        self._close()

    def _pair(self, probe: Probe) -> None:
        trained = [p for opt in list(probe.optimizers) for g in opt.param_groups for p in g["params"]]
        ids = {id(p) for p in trained}
        by_shape: dict[tuple[int, ...], list[torch.Tensor]] = {}
        for p in trained:
            by_shape.setdefault(tuple(p.shape), []).append(p)
        owner = {id(p): (root, name) for root in self.roots.values() for name, p in root.named_parameters()}
        twins: dict[int, tuple[nn.Module, nn.Module]] = {}  # id(copy root) -> (it, the trained root of its twins)
        total = 0
        with torch.no_grad():
            live = gc.get_objects()  # one walk of the heap for both kinds of copies no forward ran
            holders: list[Any] = [
                *self.roots.values(),
                *_unrun_tops(self.roots.values(), live),
                *_tensor_lists(ids, live),
            ]
            del live
            for root in holders:
                named = root.named_parameters() if isinstance(root, nn.Module) else _listed(root)
                for name, c in named:
                    if id(c) in ids or c.numel() < 2:
                        continue
                    twin = next(
                        (o for o in by_shape.get(tuple(c.shape), ()) if o.dtype == c.dtype and _same(o, c)), None
                    )
                    if twin is None:
                        continue
                    total += 2 * c.numel()
                    if total > MAX_PAIRED_ELEMENTS:
                        self.pairs, self.done = [], True
                        return
                    self.pairs.append((root, name, c, c.detach().clone(), twin, twin.detach().clone()))
                    ids.add(id(c))  # paired once, under the first root that holds it
                    held = owner.get(id(twin))
                    if held is not None and held[1] == name and held[0] is not root:
                        twins.setdefault(id(root), (root, held[0]))
            for root, trained_root in twins.values():
                if not isinstance(root, nn.Module):
                    continue
                theirs = dict(trained_root.named_buffers())
                for name, b in root.named_buffers():
                    o = theirs.get(name)
                    if b.is_floating_point() and o is not None and o.shape == b.shape and o is not b:
                        self.buffers.append((root, name, b, b.detach().clone(), o, o.detach().clone()))
        if not self.pairs:
            self.done = True

    def _judge(self, probe: Probe) -> None:
        moved: list[str] = []
        left: list[tuple[nn.Module, str]] = []
        rates: list[float] = []
        followed: set[int] = set()  # ids of the roots some of whose copies moved
        with torch.no_grad():
            for root, name, c, c0, o, o0 in self.pairs:
                if torch.equal(o, o0):
                    continue  # its trained twin did not move (lr 0, no gradient): nothing to follow
                if torch.equal(c, c0):
                    left.append((root, name))
                else:
                    moved.append(name)
                    followed.add(id(root))
                    gap = (o.detach() - c0).double().flatten()
                    if float(gap.dot(gap)) > 0:
                        rates.append(float((c.detach() - c0).double().flatten().dot(gap) / gap.dot(gap)))
        self.pairs = []
        self._judge_rate(probe, rates)
        self._judge_buffers(probe, followed)
        # a copy that never ran (found by _unrun_tops) is left behind only beside its own moving parts: a frozen
        # snapshot next to a moving EMA model is two copies, not one half-updated one
        left = [(r, n) for r, n in left if id(r) in self.roots or id(r) in followed]
        if not moved or not left:
            return
        root = left[0][0]
        names = [n for r, n in left if r is root]
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{len(moved)} copies of trained weights outside every optimizer followed them over a step "
            f"(a momentum/EMA copy), but {len(left)} did not move although their trained twins did "
            f"({type(root).__name__}: {', '.join(names[:4])}): the EMA update leaves part of the copy at its "
            "initial weights",
            evidence={"copies_following": len(moved), "copies_left_behind": len(left), "left_behind": names[:8]},
            fix="update every parameter of the copy: zip(online.parameters(), target.parameters()) over the whole "
            "online and target models (backbone and head), or use torch.optim.swa_utils.AveragedModel",
        )

    def _judge_buffers(self, probe: Probe, followed: set[int]) -> None:
        """A copy that followed its twins over the window while none of its float buffers (batch-norm running
        statistics) moved, though the trained model's did: the update averages the parameters only, and the copy
        normalises with the statistics it was made with."""
        stale = [
            (r, n)
            for r, n, b, b0, o, o0 in self.buffers
            if id(r) in followed and not torch.equal(o, o0) and torch.equal(b, b0)
        ]
        moved = [n for r, n, b, b0, _, _ in self.buffers if id(r) in followed and not torch.equal(b, b0)]
        self.buffers = []
        if not stale or moved:
            return
        root = stale[0][0]
        probe.report(
            kind="bug",
            check="ema_buffers_stale",
            message=f"a copy of the trained weights outside every optimizer ({type(root).__name__}, an EMA/momentum "
            f"model) followed them over a step, but none of its {len(stale)} buffers moved while the trained "
            f"model's did ({', '.join(n for _, n in stale[:3])}): the update averages the parameters only, so the "
            "copy normalises with the batch-norm statistics it was made with",
            evidence={"stale_buffers": len(stale), "buffers": [n for _, n in stale[:6]]},
            fix="update the buffers too: copy (or average) model.buffers() into the copy's, or use "
            "torch.optim.swa_utils.AveragedModel(..., use_buffers=True)",
            where=self.writes.line if self.writes is not None else None,
        )

    def _judge_rate(self, probe: Probe, rates: list[float]) -> None:
        if not rates:
            return
        rate = sorted(rates)[len(rates) // 2]
        where = self.writes.line if self.writes is not None else None
        if rate <= -AWAY_RATE:
            probe.report(
                kind="bug",
                check="ema_moves_away",
                message=f"a copy of the trained weights outside every optimizer (an EMA/momentum model) moved "
                f"{-rate:.4f} of the distance AWAY from them in one step: the update has the wrong sign (ema + "
                "(1 - decay) * (ema - model)), so the average drifts off instead of following the model",
                evidence={"share_moved_per_step": rate, "copies_measured": len(rates)},
                fix="ema += (1 - decay) * (model - ema), i.e. ema.lerp_(model, 1 - decay), or "
                "torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))",
                where=where,
            )
            return
        if not SWAPPED_RATE <= rate <= COPY_RATE:
            return
        probe.report(
            kind="bug",
            check="ema_decay_swapped",
            message=f"a copy of the trained weights outside every optimizer (an EMA/momentum model) moved "
            f"{rate:.4f} of the way to them in one step: it keeps {1 - rate:.4f} of its old value, so the average "
            "is the latest weights with almost no history (decay and 1 - decay swapped)",
            evidence={"share_moved_per_step": rate, "copies_measured": len(rates)},
            fix="ema = decay * ema + (1 - decay) * model with decay near 1 (ema.lerp_(model, 1 - decay)), or "
            "torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))",
            where=where,
        )


def _tensor_lists(trained: set[int], live: list[Any]) -> list[list[torch.Tensor]]:
    """The Python lists among ``live`` of (at most MAX_LISTED) tensors outside every optimizer (an EMA helper's
    ``shadow_params``, a list of ``p.detach().clone()``), the copies a hand-written average keeps without a module."""
    return [
        obj
        for obj in live
        if type(obj) is list
        and 0 < len(obj) <= MAX_LISTED
        and all(type(t) is torch.Tensor and id(t) not in trained for t in obj)
        and any(t.is_floating_point() for t in obj)
    ]


def _listed(tensors: list[torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    return [(f"[{i}]", t) for i, t in enumerate(tensors)]


def _unrun_tops(ran: Any, live: list[Any]) -> list[nn.Module]:
    """The outermost modules among ``live`` that did not run a forward before the first step and are not inside
    one that did: an EMA model that is only averaged into (evaluated at the end) never runs while the watch lasts."""
    seen = {id(m) for root in ran for m in root.modules()}
    found = [obj for obj in live if issubclass(type(obj), nn.Module) and id(obj) not in seen]
    inner = {id(m) for top in found for m in top.modules() if m is not top}
    return [m for m in found if id(m) not in inner]


def _same(a: torch.Tensor, b: Any) -> bool:
    """Equal up to the rounding of one EMA update applied to equal tensors (``k.mul_(m).add_(q, alpha=1 - m)``)."""
    return bool(torch.allclose(a.detach(), b.detach(), rtol=1e-5, atol=1e-7))
