"""A label leak: the target is one of the input features (a label column left in the feature matrix, raw
or standardized, or one-hot encoded with the other categorical columns), so the model can read the answer.
Measured on the batch the loss actually saw: the correlation of each input column with the target and, for a
class target, with each class's indicator (1 where the row is that class)."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import assigned_at

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, LossEvent, Probe

# |Pearson r| of a column with the target. A copy, standardized in float32, is off 1 by ~1e-12; a real
# feature that predicts well stays far below 1 - 1e-6 (a random walk's last value vs its next one over 1000
# steps: r ~ 1 - 5e-4), so only a copy of the target reaches this
LEAK_CORRELATION = 1 - 1e-6
MIN_ROWS = 8  # fewer rows can line up by chance
MAX_FEATURES = 4096  # wider inputs are images or embeddings, not a table with a label column
MAX_ONE_HOT_CLASSES = 256  # class indicators compared column by column (a (features x classes) correlation)
# an indicator is compared only when it has this many rows of each value: a class seen once in the batch lines up
# with any binary feature that happens to be 1 in that row alone
MIN_INDICATOR_ROWS = 4


def _correlations(cols: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Pearson r of every column of ``cols`` (rows, d) with every column of ``targets`` (rows, k): (d, k);
    0 where either is constant."""
    xc, yc = cols - cols.mean(dim=0), targets - targets.mean(dim=0)
    denom = xc.norm(dim=0)[:, None] * yc.norm(dim=0)[None, :]
    return torch.where(denom > 0, (xc.T @ yc) / denom.clamp_min(1e-300), torch.zeros_like(denom))


def _targets(y: torch.Tensor, function: str, classes: int | None) -> tuple[torch.Tensor, list[str]]:
    """The target as a column, then (for an integer class target) one indicator column per class present in
    the batch in at least ``MIN_INDICATOR_ROWS`` rows and absent from as many; with each column's name."""
    target = y.detach().reshape(-1).double()
    cols, names = [target], ["the target"]
    if function in ("cross_entropy", "nll_loss") and not y.is_floating_point() and classes is not None:
        present = torch.unique(target)
        if 2 < present.numel() <= MAX_ONE_HOT_CLASSES:  # two classes: an indicator is the target itself
            for c in present:
                ind = (target == c).double()
                if MIN_INDICATOR_ROWS <= int(ind.sum()) <= ind.numel() - MIN_INDICATOR_ROWS:
                    cols.append(ind)
                    names.append(f"the one-hot indicator of class {int(c)}")
    return torch.stack(cols, dim=1), names


@register
class LabelLeak(Check):
    """The last training forward's first input, when it is a float table ``(rows, features)``, against the
    target of the loss that follows: a column that is an affine copy of the target, or of one class's indicator
    (a one-hot encoded label), leaks it (|r| >= 1 - 1e-6)."""

    name = "label_leak"

    def __init__(self) -> None:
        self.table: torch.Tensor | None = None
        self.first_loss: float | None = None
        # the last training forward's other float inputs: (keyword or position, tensor, the line that assigned it)
        self.others: list[tuple[str | int, torch.Tensor, tuple[str | None, int | None]]] = []

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = ev.first_tensor()
        ok = x is not None and x.is_floating_point() and x.dim() >= 2 and x.shape[0] >= MIN_ROWS
        if ok and x is not None and x.dim() > 2:  # a window (rows, 1, time), a sequence: its values as columns
            x = x.reshape(x.shape[0], -1)
        self.table = x if ok and x is not None and x.shape[1] <= MAX_FEATURES and ev.training else None
        self.others = []
        if ev.training and ev.grad_enabled:
            self._decoder_given_labels(probe, ev)
            named: list[tuple[str | int, object]] = [*enumerate(ev.inputs), *ev.kwargs.items()]
            tensors = [(k, v) for k, v in named if isinstance(v, torch.Tensor)]
            frame = sys._getframe(1)
            self.others = [(k, v, assigned_at(v, frame)) for k, v in tensors[1:] if v.is_floating_point()]

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        x, y = self.table, ev.target
        self.table = None
        if self.first_loss is None and ev.value.numel() == 1:
            self.first_loss = float(ev.value.detach())
        others, self.others = self.others, []
        if isinstance(y, torch.Tensor) and y.is_floating_point() and others:
            self._target_given(probe, ev, others)
        if x is None or not isinstance(y, torch.Tensor) or y.shape[0] != x.shape[0] or y.numel() != x.shape[0]:
            return
        if int(torch.unique(y).numel()) < 2:
            return
        is_class = ev.function in ("cross_entropy", "nll_loss") and ev.input.dim() == 2
        classes = int(ev.input.shape[1]) if is_class else None
        targets, names = _targets(y, ev.function, classes)
        r = _correlations(x.detach().double(), targets)
        flat = int(r.abs().argmax())
        best, which = divmod(flat, r.shape[1])
        corr = float(r[best, which])
        if abs(corr) < LEAK_CORRELATION:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"input column {best} of {x.shape[1]} is {names[which]} (correlation {corr:.4f} over "
            f"{x.shape[0]} rows): the label leaks into the features, the model reads the answer and the "
            "validation score means nothing",
            evidence={
                "leaking_column": best,
                "leaks": names[which],
                "correlation": corr,
                "rows": int(x.shape[0]),
                "features": int(x.shape[1]),
                "first_loss": self.first_loss,
                "ln_classes": math.log(classes) if classes else None,
            },
            fix="drop the target column (and anything computed from it) from the inputs before training",
        )

    def _target_given(
        self, probe: Probe, ev: LossEvent, others: list[tuple[str | int, torch.Tensor, tuple[str | None, int | None]]]
    ) -> None:
        """The loss's target is, value for value, an input the model was given besides its first (a decoder fed
        the very sequence it is scored on, not the shifted one): its prediction reads the answer at each
        position. An autoencoder's target is its first input and is not judged. Names the line that assigned
        the variable the model was given."""
        y = ev.target
        assert isinstance(y, torch.Tensor)
        if y.numel() < MIN_ROWS or ev.input.shape != y.shape:
            return
        found = next(
            ((k, at) for k, v, at in others if v.shape == y.shape and torch.equal(v.detach(), y.detach())), None
        )
        if found is None:
            return
        hit, where = found
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the {ev.function} target equals, value for value, the model's input "
            f"{hit if isinstance(hit, str) else f'#{hit}'} of shape {tuple(y.shape)}: the model is given the "
            "answer it is scored on (a decoder fed the target itself instead of the target shifted by one)",
            evidence={"input": hit, "shape": list(y.shape), "first_loss": self.first_loss},
            fix="feed the decoder the previous values (the last observed value, then target[:, :-1]), never the "
            "target at the position it predicts",
            where=where if where[0] is not None else None,
        )

    def _decoder_given_labels(self, probe: Probe, ev: ForwardEvent) -> None:
        """A Hugging Face encoder-decoder given ``decoder_input_ids`` equal to its ``labels`` at every trained
        position: the model shifts labels into decoder inputs itself only when none are given, so the decoder
        reads the token it must predict. Names the line that passed them."""
        dec, labels = ev.kwargs.get("decoder_input_ids"), ev.kwargs.get("labels")
        if not isinstance(dec, torch.Tensor) or not isinstance(labels, torch.Tensor) or dec.shape != labels.shape:
            return
        trained = labels != -100
        if int(trained.sum()) < MIN_ROWS or not bool((dec == labels)[trained].all()):
            return
        where = assigned_at(dec, sys._getframe(2))
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(ev.module).__name__} was given decoder_input_ids equal to its labels at all "
            f"{int(trained.sum())} trained positions: the decoder reads the token it must predict (the model "
            "builds shifted decoder inputs from labels only when none are given)",
            evidence={"trained_positions": int(trained.sum())},
            fix="drop decoder_input_ids (the model shifts labels right itself), or pass labels shifted right with "
            "the decoder start token first",
            where=where if where[0] is not None else None,
        )
