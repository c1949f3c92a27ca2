"""Class weights that amplify the imbalance they were meant to undo (issue 32). A weighted cross-entropy
(``weight=``, ``nn.CrossEntropyLoss(weight=...)``) or a binary loss's ``pos_weight`` is there to give the rare
class more say; written in the wrong order (inverse frequencies listed for the classes reversed, ``neg / pos``
turned over) it gives the frequent class more, and the model collapses onto it with no error. Measured on the
targets the weighted loss saw in the watched steps: the most frequent class must not carry a weight well above
the rarest one's."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import assigned_at

if TYPE_CHECKING:
    from expkit.doctor.probe import LossEvent, Probe

MIN_TARGETS = 64  # targets seen before the counts are judged
IMBALANCE = 3.0  # the frequent class is at least this many times the rare one's count
FAVOURED = 2.0  # ... and its weight at least this many times the rare one's


@register
class ClassWeightsFavourMajority(Check):
    """A weighted loss whose weights, against the class counts of its own targets over the watched steps, rank
    the frequent class well above the rare one."""

    name = "class_weights_favour_majority"

    def __init__(self) -> None:
        self.counts: torch.Tensor | None = None
        self.weight: torch.Tensor | None = None
        self.where: tuple[str | None, int | None] = (None, None)
        self.done = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if self.done or probe.inside_forward or not isinstance(ev.target, torch.Tensor):
            return
        if ev.function in ("cross_entropy", "nll_loss"):
            weight, target = ev.kwargs.get("weight"), ev.target
            if not isinstance(weight, torch.Tensor) or weight.dim() != 1 or target.is_floating_point():
                return
            target = target.reshape(-1)
            target = target[(target >= 0) & (target < weight.numel())]  # ignore_index (-100) and the like
            counts = torch.bincount(target.cpu(), minlength=weight.numel()).double()
        elif ev.function == "binary_cross_entropy_with_logits":
            weight, target = ev.kwargs.get("pos_weight"), ev.target
            if (
                not isinstance(weight, torch.Tensor)
                or weight.numel() != 1
                or not bool(((target == 0) | (target == 1)).all())
            ):
                return
            pos = float(target.sum())
            counts = torch.tensor([target.numel() - pos, pos], dtype=torch.float64)
            weight = torch.tensor([1.0, float(weight)])
        else:
            return
        if self.weight is None:
            self.weight, self.where = weight.detach().double().cpu(), assigned_at(weight, sys._getframe(1), outer=True)
        elif self.weight.shape != weight.shape:
            return  # another weighted loss: the first one is judged
        self.counts = counts if self.counts is None else self.counts + counts
        if float(self.counts.sum()) >= MIN_TARGETS:
            self._judge(probe)

    def finish(self, probe: Probe) -> None:
        if not self.done and self.counts is not None and float(self.counts.sum()) >= MIN_TARGETS:
            self._judge(probe)

    def _judge(self, probe: Probe) -> None:
        self.done = True
        counts, weight = self.counts, self.weight
        assert counts is not None and weight is not None
        seen = counts > 0
        if int(seen.sum()) < 2:
            return
        idx = torch.arange(counts.numel())[seen]
        major, minor = int(idx[counts[seen].argmax()]), int(idx[counts[seen].argmin()])
        ratio = float(counts[major] / counts[minor])
        if ratio < IMBALANCE or float(weight[minor]) <= 0 or float(weight[major] / weight[minor]) < FAVOURED:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"class {major} is {ratio:.1f}x as frequent as class {minor} in the targets of the watched steps, "
            f"and the loss weighs it {float(weight[major] / weight[minor]):.1f}x as much: the class weights amplify "
            "the imbalance (inverse frequencies listed in the wrong order?)",
            evidence={
                "frequent_class": major,
                "rare_class": minor,
                "count_ratio": round(ratio, 4),
                "weight_ratio": round(float(weight[major] / weight[minor]), 4),
                "counts": [int(c) for c in counts],
                "weights": [round(float(w), 6) for w in weight],
            },
            fix="give each class the inverse of its frequency (weight[c] = N / (C * count[c])), in class-id order",
            where=self.where if self.where[0] is not None else None,
        )
