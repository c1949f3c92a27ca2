"""A contrastive loss whose targets point away from the positives the data shows. In SimCLR, MoCo or any InfoNCE
loss written as ``cross_entropy(similarities, positive_index)``, two views of one sample are near each other from
the first step (a random encoder is smooth, the views differ by an augmentation), so each row of the similarity
logits singles out one column by a clear margin, a different one for each row: its positive. When most targets
are not that column, the index was built for another layout (interleaved views against concatenated ones, the
diagonal removed without shifting) and the loss pulls unrelated samples together. Measured on the first
cross-entropy of the watch whose logits have about as many columns as rows; a classifier's logits (few columns,
one favourite class for many rows, or no clear favourite at all) are not judged."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import assigned_at

if TYPE_CHECKING:
    from expkit.doctor.probe import LossEvent, Probe

MIN_ROWS = 8
MARGIN = 0.5  # logit gap between a row's best column and its second: the column it singles out
CLEAR_SHARE = 0.7  # rows with such a column, and distinct columns among them (a positive per row)
AGREE_AT_MOST = 0.2  # targets at the singled-out column: below this share the targets are elsewhere


@register
class ContrastiveTargetOffPositive(Check):
    """The first similarity-shaped cross-entropy: rows single out distinct columns by a clear margin, and the
    targets are at those columns for at most a fifth of the rows."""

    name = "contrastive_target_off_positive"

    def __init__(self) -> None:
        self.done = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if self.done or ev.function != "cross_entropy" or probe.inside_forward:
            return
        logits, target = ev.input, ev.target
        if not isinstance(target, torch.Tensor) or target.dim() != 1 or target.is_floating_point():
            return
        if logits.dim() != 2 or logits.shape[0] < MIN_ROWS or logits.shape[1] < logits.shape[0] - 1:
            return
        self.done = True
        with torch.no_grad():
            top = logits.detach().float().topk(2, dim=1)
            clear = (top.values[:, 0] - top.values[:, 1]) >= MARGIN
            rows = int(clear.sum())
            if rows < CLEAR_SHARE * logits.shape[0]:
                return
            best = top.indices[clear, 0]
            if torch.unique(best).numel() < CLEAR_SHARE * rows:
                return  # many rows favour one column: a classifier's favourite class, not positives
            agree = float((target.to(best.device)[clear] == best).float().mean())
        if agree > AGREE_AT_MOST:
            return
        where = assigned_at(target, sys._getframe(1))
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{rows} of {logits.shape[0]} rows of the similarity logits single out one column each (by "
            f"{MARGIN:g}+ logits, {torch.unique(best).numel()} distinct columns: the positive pairs), but only "
            f"{agree:.0%} of the targets point there: the positive index was built for another layout of the "
            "views, and the loss pulls unrelated samples together",
            evidence={"rows_with_clear_column": rows, "targets_at_that_column": agree, "columns": logits.shape[1]},
            fix="build the positive index for the layout you concatenated (views [v1; v2]: row i pairs with i + N "
            "and i - N), and shift it by one past a removed diagonal",
            where=where if where[0] is not None else None,
        )
