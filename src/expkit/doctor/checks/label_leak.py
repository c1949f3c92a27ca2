"""A label leak: the target is one of the input features (a label column left in the feature matrix, raw
or standardized), so the model can read the answer. Measured on the batch the loss actually saw: the
correlation of each input column with the target."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, LossEvent, Probe

# |Pearson r| of a column with the target. A copy, standardized in float32, is off 1 by ~1e-12; a real
# feature that predicts well stays far below 1 - 1e-6 (a random walk's last value vs its next one over 1000
# steps: r ~ 1 - 5e-4), so only a copy of the target reaches this
LEAK_CORRELATION = 1 - 1e-6
MIN_ROWS = 8  # fewer rows can line up by chance
MAX_FEATURES = 4096  # wider inputs are images or embeddings, not a table with a label column


@register
class LabelLeak(Check):
    """The last training forward's first input, when it is a float table ``(rows, features)``, against the
    target of the loss that follows: a column that is an affine copy of the target (|r| >= 1 - 1e-6) leaks it."""

    name = "label_leak"

    def __init__(self) -> None:
        self.table: torch.Tensor | None = None
        self.first_loss: float | None = None

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = ev.first_tensor()
        ok = x is not None and x.is_floating_point() and x.dim() == 2 and x.shape[0] >= MIN_ROWS
        self.table = x if ok and x is not None and x.shape[1] <= MAX_FEATURES and ev.training else None

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        x, y = self.table, ev.target
        self.table = None
        if self.first_loss is None and ev.value.numel() == 1:
            self.first_loss = float(ev.value.detach())
        if x is None or not isinstance(y, torch.Tensor) or y.shape[0] != x.shape[0] or y.numel() != x.shape[0]:
            return
        target = y.detach().reshape(-1).double()
        if int(torch.unique(target).numel()) < 2:
            return
        cols = x.detach().double()
        xc, yc = cols - cols.mean(dim=0), target - target.mean()
        denom = xc.norm(dim=0) * yc.norm()
        r = torch.where(denom > 0, (xc * yc[:, None]).sum(dim=0) / denom.clamp_min(1e-300), torch.zeros_like(denom))
        best = int(r.abs().argmax())
        if float(r[best].abs()) < LEAK_CORRELATION:
            return
        classes = int(ev.input.shape[1]) if ev.function == "cross_entropy" and ev.input.dim() == 2 else None
        probe.report(
            kind="bug",
            check=self.name,
            message=f"input column {best} of {x.shape[1]} is the target itself (correlation {float(r[best]):.4f} over "
            f"{x.shape[0]} rows): the label leaks into the features, the model reads the answer and the "
            "validation score means nothing",
            evidence={
                "leaking_column": best,
                "correlation": float(r[best]),
                "rows": int(x.shape[0]),
                "features": int(x.shape[1]),
                "first_loss": self.first_loss,
                "ln_classes": math.log(classes) if classes else None,
            },
            fix="drop the target column (and anything computed from it) from the inputs before training",
        )
