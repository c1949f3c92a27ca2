"""A momentum (EMA) copy that follows only part of the model: MoCo's key encoder, BYOL's target, a mean teacher or
an EMA model is a copy of the trained weights that no optimizer holds and that the program moves towards them at
every step. Measured, not read from the update loop: at the first step, the parameters outside every optimizer
that equal a trained parameter (a ``deepcopy``) are paired with it; over the next step window, when some copies
moved while the trained weights moved and others stayed exactly where they were, the update loop leaves part of
the copy behind (a key head missing from the zipped parameter lists). A frozen copy (a DPO reference model, a
teacher kept at its initial weights) moves nowhere and is not flagged; neither is a copy that moves as a whole."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe, StepEvent

MAX_PAIRED_ELEMENTS = 50_000_000  # copies of bigger models are not snapshot (the watch must stay light)


@register
class EmaCopyPartial(Check):
    """Copies of the trained weights outside every optimizer: over one step window, some follow their trained
    twins and some, whose twins moved, do not move at all."""

    name = "ema_copy_partial"

    def __init__(self) -> None:
        self.roots: dict[int, nn.Module] = {}
        self.pairs: list[tuple[nn.Module, str, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self.steps = 0
        self.done = False

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
            self._judge(probe)

    def _pair(self, probe: Probe) -> None:
        trained = [p for opt in list(probe.optimizers) for g in opt.param_groups for p in g["params"]]
        ids = {id(p) for p in trained}
        by_shape: dict[tuple[int, ...], list[torch.Tensor]] = {}
        for p in trained:
            by_shape.setdefault(tuple(p.shape), []).append(p)
        total = 0
        with torch.no_grad():
            for root in self.roots.values():
                for name, c in root.named_parameters():
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
        if not self.pairs:
            self.done = True

    def _judge(self, probe: Probe) -> None:
        moved: list[str] = []
        left: list[tuple[nn.Module, str]] = []
        with torch.no_grad():
            for root, name, c, c0, o, o0 in self.pairs:
                if torch.equal(o, o0):
                    continue  # its trained twin did not move (lr 0, no gradient): nothing to follow
                if torch.equal(c, c0):
                    left.append((root, name))
                else:
                    moved.append(name)
        self.pairs = []
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


def _same(a: torch.Tensor, b: Any) -> bool:
    """Equal up to the rounding of one EMA update applied to equal tensors (``k.mul_(m).add_(q, alpha=1 - m)``)."""
    return bool(torch.allclose(a.detach(), b.detach(), rtol=1e-5, atol=1e-7))
