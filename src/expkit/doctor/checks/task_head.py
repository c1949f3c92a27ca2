"""A Hugging Face classifier built as a regressor (issue 32): ``num_labels=1`` makes a
``...ForSequenceClassification`` compute a mean squared error between its one output and the labels
(transformers#1706). Given class ids (integer labels), it regresses the ids as ordered numbers: topic 3 is
"three times" topic 1, and no softmax ever separates the classes. Measured on the training forward: the labels the
model received are integers and the model resolved its problem type to regression. Names the ``num_labels=``
keyword (else where the model was built)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import keyword_line

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe


@register
class ClassIdsRegressed(Check):
    """A classifier whose config resolved to regression (one output) trained on integer class ids."""

    name = "class_ids_regressed"

    def __init__(self) -> None:
        self.done = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        labels = ev.kwargs.get("labels")
        config = getattr(ev.module, "config", None)
        if self.done or not (ev.training and ev.grad_enabled) or not isinstance(labels, torch.Tensor):
            return
        if getattr(config, "problem_type", None) != "regression" or getattr(config, "num_labels", None) != 1:
            return
        if labels.is_floating_point() or labels.dtype == torch.bool or labels.numel() < 2:
            return
        classes = sorted({int(v) for v in labels.detach().flatten().unique()[:64]})
        if len(classes) < 2:
            return
        self.done = True
        file, line = probe.built_at(ev.module)
        written = keyword_line(file, ("num_labels",), before=line) if file is not None else None
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(ev.module).__name__} has num_labels=1, so it is a regressor: its loss is the mean "
            f"squared error between one output and the integer labels {classes[:6]}, class ids fitted as ordered "
            "numbers, not a classification",
            evidence={"num_labels": 1, "label_values": classes[:16], "labels_dtype": str(labels.dtype)},
            fix=f"num_labels={max(classes) + 1} (one logit per class: cross-entropy), or float labels with "
            "problem_type='regression' when the target really is a number",
            where=(file, written or line) if file is not None else None,
        )
