"""What the loss was fed: probabilities where it expects logits (softmax before ``cross_entropy``, a
sigmoid before ``binary_cross_entropy_with_logits``), logits where ``nll_loss`` expects log-probabilities.
The sigmoid is found by the tensor's provenance (a ``SigmoidBackward`` node just above the loss input), not by
its values: logits of a zero-initialised logistic regression or a fresh discriminator all lie in [0, 1]."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import LossEvent, Probe

PROB_SUM_ATOL = 1e-3  # rows of a softmax sum to 1 within float32 rounding; raw logits essentially never do
MIN_VALUES = 8  # fewer values in [0, 1] can happen by chance


SHAPE_NODES = ("View", "Reshape", "Squeeze", "Unsqueeze", "Permute", "Transpose", "Clone", "Slice", "Select", "ToCopy")


def made_by(t: torch.Tensor, op: str, hops: int = 4) -> bool:
    """``t`` is the output of ``op`` (``SigmoidBackward0``), seen through up to ``hops`` shape-only ops."""
    node = t.grad_fn
    for _ in range(hops + 1):
        if node is None:
            return False
        name = type(node).__name__
        if name == op:
            return True
        if not name.startswith(SHAPE_NODES):
            return False
        node = next((n for n, _ in node.next_functions if n is not None), None)
    return False


def _class_dim(x: torch.Tensor) -> int:
    return 1 if x.dim() >= 2 else 0


@register
class ProbabilitiesIntoLogitLoss(Check):
    name = "probabilities_into_loss"

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        x = ev.input.detach()
        if not x.is_floating_point() or x.numel() < MIN_VALUES:
            return
        lo, hi = float(x.min()), float(x.max())
        if ev.function == "cross_entropy" and x.dim() >= 2 and x.shape[1] > 1 and lo >= 0 and hi <= 1:
            sums = x.float().sum(dim=_class_dim(x))
            err = float((sums - 1).abs().max())
            if err < PROB_SUM_ATOL:
                probe.report(
                    kind="bug",
                    check="softmax_before_cross_entropy",
                    message="cross_entropy was given probabilities (every row in [0, 1] summing to 1), not logits: "
                    "it applies log_softmax itself, so the gradients are squashed and training crawls",
                    evidence={"input_min": lo, "input_max": hi, "max_row_sum_error": err, "classes": int(x.shape[1])},
                    fix="pass the raw logits to CrossEntropyLoss / F.cross_entropy; drop the softmax "
                    "(keep it only for reporting probabilities)",
                )
        elif ev.function == "binary_cross_entropy_with_logits" and made_by(ev.input, "SigmoidBackward0"):
            probe.report(
                kind="bug",
                check="sigmoid_before_bce_with_logits",
                message=f"binary_cross_entropy_with_logits was given the output of a sigmoid ({x.numel()} values "
                f"in [{lo:.3g}, {hi:.3g}]): the loss applies sigmoid again",
                evidence={"input_min": lo, "input_max": hi, "values": x.numel()},
                fix="pass the raw logits to BCEWithLogitsLoss (or use BCELoss on probabilities)",
            )
        elif ev.function == "nll_loss" and hi > 1e-6:
            probe.report(
                kind="bug",
                check="logits_into_nll_loss",
                message=f"nll_loss was given values up to {hi:.3g}: log-probabilities are <= 0, so these are "
                "logits or probabilities and the loss is not a cross-entropy",
                evidence={"input_min": lo, "input_max": hi},
                fix="apply log_softmax before nll_loss, or use cross_entropy on the logits",
            )
