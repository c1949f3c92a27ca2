"""What the loss was fed: probabilities where it expects logits (softmax before ``cross_entropy``, a
sigmoid before ``binary_cross_entropy_with_logits``), logits where ``nll_loss`` expects log-probabilities,
probabilities or logits where ``kl_div`` expects log-probabilities (values above 0).
The sigmoid is found by the tensor's provenance (a ``SigmoidBackward`` node just above the loss input), not by
its values: logits of a zero-initialised logistic regression or a fresh discriminator all lie in [0, 1]."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import LossEvent, Probe

# the closed range of each bounded activation's output, by its autograd node
ACTIVATION_RANGES = {
    "ReluBackward0": (0.0, float("inf")),
    "SoftplusBackward0": (0.0, float("inf")),
    "SigmoidBackward0": (0.0, 1.0),
    "TanhBackward0": (-1.0, 1.0),
}
REGRESSION_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss")
OUT_OF_RANGE_SHARE = 0.1  # of the targets: a few outliers beyond the range are an approximation, not a bug
LOG_PROB_ATOL = 1e-3  # a log-softmax's logsumexp over the classes is 0 up to rounding
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


def made_by_node(t: torch.Tensor, ops: tuple[str, ...], hops: int = 4) -> Any:
    """The autograd node among ``ops`` that made ``t``, seen through up to ``hops`` shape-only ops, or None."""
    node = t.grad_fn
    for _ in range(hops + 1):
        if node is None:
            return None
        name = type(node).__name__
        if name in ops:
            return node
        if not name.startswith(SHAPE_NODES):
            return None
        node = next((n for n, _ in node.next_functions if n is not None), None)
    return None


def _squash_site(probe: Probe, t: torch.Tensor) -> tuple[str, int] | None:
    """Where the softmax/sigmoid just above ``t`` came from: an ``nn.Softmax`` module's construction, else the
    user's line that applied it (anomaly mode's record of its node); None when neither is known (the loss call
    is named)."""
    from expkit.doctor.checks.graph_kept import made_where
    from expkit.doctor.findings import user_line_of

    node = made_by_node(t, ("SoftmaxBackward0", "SigmoidBackward0"))
    if node is None:
        return None
    module = probe.softmax_nodes.get(id(node)) or probe.activation_nodes.get(id(node))
    made = probe.made_at.get(id(module)) if module is not None else None
    file, line = user_line_of(made[1]) if made else made_where(node)
    return (file, line) if file is not None and line is not None else None


def _fed_site(probe: Probe, t: torch.Tensor) -> tuple[str, int] | None:
    """Where the loss's input came from: the softmax/sigmoid just above it (:func:`_squash_site`), else the user's
    line whose own op made its last autograd node (``log_probs = logits.transpose(0, 1)``: the log_softmax left out
    there; a layer's output is not such an op), else None (the loss call is named)."""
    from expkit.doctor.checks.graph_kept import made_where

    site = _squash_site(probe, t)
    if site is not None:
        return site
    file, line = made_where(t.grad_fn, direct=True) if t.grad_fn is not None else (None, None)
    return (file, line) if file is not None and line is not None else None


def _class_dim(x: torch.Tensor) -> int:
    return 1 if x.dim() >= 2 else 0


@register
class ProbabilitiesIntoLogitLoss(Check):
    """Probabilities given to a loss that takes logits: softmax output into ``cross_entropy``, sigmoid output
    into BCE-with-logits, logits into ``nll_loss``."""

    name = "probabilities_into_loss"
    reports: ClassVar[dict[str, str]] = {
        "softmax_before_cross_entropy": "cross_entropy given softmax outputs (it applies log_softmax itself).",
        "sigmoid_before_bce_with_logits": "binary_cross_entropy_with_logits given sigmoid outputs (it applies one).",
        "logits_into_nll_loss": "nll_loss given raw logits instead of log-probabilities.",
        "kl_div_not_log_probabilities": "kl_div given probabilities or logits as its input, not log-probabilities.",
        "kl_div_mean_reduction": "kl_div with reduction='mean' (the default): divided by the classes too.",
    }

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
                    where=_squash_site(probe, ev.input),
                )
        elif ev.function == "binary_cross_entropy_with_logits" and made_by(ev.input, "SigmoidBackward0"):
            probe.report(
                kind="bug",
                check="sigmoid_before_bce_with_logits",
                message=f"binary_cross_entropy_with_logits was given the output of a sigmoid ({x.numel()} values "
                f"in [{lo:.3g}, {hi:.3g}]): the loss applies sigmoid again",
                evidence={"input_min": lo, "input_max": hi, "values": x.numel()},
                fix="pass the raw logits to BCEWithLogitsLoss (or use BCELoss on probabilities)",
                where=_squash_site(probe, ev.input),
            )
        elif ev.function == "ctc_loss" and x.dim() == 3:
            # log-probabilities over the class axis (the last): each position's logsumexp is 0
            spread = float(torch.logsumexp(x.float(), dim=-1).abs().max())
            if hi > 1e-6 or spread > LOG_PROB_ATOL:
                probe.report(
                    kind="bug",
                    check="logits_into_nll_loss",
                    message=f"ctc_loss was given values in [{lo:.3g}, {hi:.3g}] whose logsumexp over the classes is "
                    f"up to {spread:.3g} away from 0: not log-probabilities (raw logits), so the CTC objective can "
                    "fall by raising every logit and the alignment is not learned",
                    evidence={"input_min": lo, "input_max": hi, "max_abs_logsumexp": spread},
                    fix="apply log_softmax over the class axis before ctc_loss (x.log_softmax(-1))",
                    where=_fed_site(probe, ev.input),
                )
        elif ev.function == "kl_div":
            self._kl_div(probe, ev, x, lo, hi)
        elif ev.function == "nll_loss" and hi > 1e-6:
            probe.report(
                kind="bug",
                check="logits_into_nll_loss",
                message=f"nll_loss was given values up to {hi:.3g}: log-probabilities are <= 0, so these are "
                "logits or probabilities and the loss is not a cross-entropy",
                evidence={"input_min": lo, "input_max": hi},
                fix="apply log_softmax before nll_loss, or use cross_entropy on the logits",
                where=_fed_site(probe, ev.input),
            )

    def _kl_div(self, probe: Probe, ev: LossEvent, x: torch.Tensor, lo: float, hi: float) -> None:
        """kl_div's input must be log-probabilities (<= 0), and its 'mean' reduction divides by the classes too."""
        if hi > 1e-6:
            squashed = made_by_node(ev.input, ("SoftmaxBackward0", "SigmoidBackward0")) is not None
            what = "probabilities (a softmax's output)" if squashed else "values that are not log-probabilities"
            probe.report(
                kind="bug",
                check="kl_div_not_log_probabilities",
                message=f"kl_div was given {what}, up to {hi:.3g}, as its input: it expects log-probabilities "
                "(<= 0) and computes target * (log target - input), so the loss is not a KL divergence and its "
                "gradient does not pull the distributions together",
                evidence={"input_min": lo, "input_max": hi, "input_from_softmax": squashed},
                fix="pass log_softmax(student_logits) as kl_div's input (the target stays probabilities, or "
                "log-probabilities with log_target=True)",
                where=_fed_site(probe, ev.input),
            )
        elif ev.kwargs.get("reduction", "mean") == "mean" and x.dim() >= 2:
            classes = int(x.shape[-1])
            module = probe.loss_module
            built = probe.built_at(module) if module is not None else (None, None)
            probe.report(
                kind="bug",
                check="kl_div_mean_reduction",
                message=f"kl_div ran with reduction='mean' (nn.KLDivLoss's default): the summed divergence is "
                f"divided by every element, batch and {classes} classes alike, so the distillation term is "
                f"{classes} times smaller than the KL divergence per sample and its weight means something else",
                evidence={"classes": classes, "input_shape": list(x.shape)},
                fix="use reduction='batchmean' (nn.KLDivLoss(reduction='batchmean')), which is the KL divergence "
                "per sample",
                where=built if built[0] is not None else None,
            )


@register
class OutputCannotReachTarget(Check):
    """A regression loss whose prediction comes straight from a bounded activation (ReLU, softplus, sigmoid,
    tanh, by the input's ``grad_fn``) while 10 %+ of its targets lie outside that activation's range: those
    targets can never be reached, and where the activation is flat (a ReLU below 0) no gradient flows."""

    name = "output_cannot_reach_target"

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        y = ev.target
        if ev.function not in REGRESSION_LOSSES or not isinstance(y, torch.Tensor) or not y.is_floating_point():
            return
        node = made_by_node(ev.input, tuple(ACTIVATION_RANGES))
        if node is None or y.numel() < MIN_VALUES:
            return
        lo, hi = ACTIVATION_RANGES[type(node).__name__]
        yd = y.detach()
        outside = int(((yd < lo - 1e-6) | (yd > hi + 1e-6)).sum())
        if outside < OUT_OF_RANGE_SHARE * yd.numel():
            return
        module = probe.activation_nodes.get(id(node))
        if module is not None and id(module) in probe.made_at:
            from expkit.doctor.findings import user_line_of

            where = user_line_of(probe.made_at[id(module)][1])
        else:
            from expkit.doctor.checks.graph_kept import made_where

            where = made_where(node)
        act = type(node).__name__.removesuffix("Backward0")
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{ev.function} compares the output of a {act} (range [{lo:g}, {hi:g}]) with targets of which "
            f"{outside} of {yd.numel()} lie outside that range: the model cannot reach them",
            evidence={
                "activation": act,
                "targets_outside": outside,
                "targets": yd.numel(),
                "target_min": float(yd.min()),
                "target_max": float(yd.max()),
            },
            fix="drop the activation on the output (or pick one whose range covers the targets, or rescale the "
            "targets into its range)",
            where=where if where[0] is not None else None,
        )
