"""The first loss vs ln(classes) (C3.4): before any update, a classifier's cross-entropy sits near
ln C; far above it the initial logits are large and confidently wrong (an init or scaling problem)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.train.sanity import check_first_loss

if TYPE_CHECKING:
    from expkit.doctor.probe import LossEvent, Probe

# nats above ln C. train.sanity's own band (0.75) is for its normal(0, 0.02)-initialised char LM; a user's
# model with PyTorch's default (Kaiming-uniform) init starts less flat, so doctor flags only a loss that
# is far off. A loss *below* ln C is not flagged: a pretrained model being fine-tuned starts there.
FIRST_LOSS_ABOVE_NATS = 2.0


def _cosine_head(logits: torch.Tensor, depth: int = 8) -> bool:
    """Whether the logits were made from vectors normalised a few ops before (a vector norm in the last ``depth``
    levels of their graph): a cosine head (CosFace, ArcFace, NormFace) bounds its logits by its scale ``s``, which
    is a temperature chosen large on purpose, so its first loss says nothing about the init."""
    level = [logits.grad_fn]
    seen: set[int] = set()
    for _ in range(depth):
        nxt: list[Any] = []
        for node in level:
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if "VectorNormBackward" in type(node).__name__ or type(node).__name__.startswith("NormBackward"):
                return True
            nxt.extend(n for n, _ in node.next_functions)
        level = nxt
    return False


@register
class FirstLoss(Check):
    """A classifier's first cross-entropy, before any update, far above ln(classes) (C3.4): large, confidently
    wrong initial logits (an init or scaling problem)."""

    name = "first_loss"

    def __init__(self) -> None:
        self.done = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if self.done or probe.lead is not None or ev.function != "cross_entropy":
            return
        x = ev.input
        if x.dim() < 2 or x.shape[1] < 2 or ev.value.numel() != 1 or ev.kwargs.get("label_smoothing", 0.0):
            return
        if ev.kwargs.get("reduction", "mean") != "mean":  # a sum (HF's causal-LM loss) is not a per-token loss
            return
        self.done = True
        classes = int(x.shape[1])
        check = check_first_loss(float(ev.value.detach()), vocab_size=classes)
        # the loss the same logits give a target drawn at random (logsumexp - mean logit): large when the logits
        # are large, near ln C when only the target's own logit is low. A margin head (ArcFace, CosFace) lowers
        # the target's logit on purpose, from the labels, and starts far above ln C with near-uniform logits
        z = x.detach().float().movedim(1, -1).reshape(-1, classes)
        any_target = float((torch.logsumexp(z, dim=-1) - z.mean(dim=-1)).mean()) - check.ln_vocab
        if check.delta > FIRST_LOSS_ABOVE_NATS and any_target > FIRST_LOSS_ABOVE_NATS and not _cosine_head(x):
            probe.report(
                kind="bug",
                check=self.name,
                message=f"the first loss is {check.first_loss:.2f}, {check.delta:.2f} nats above ln {classes} = "
                f"{check.ln_vocab:.2f} (a uniform guess): the initial logits are large and confidently wrong",
                evidence={
                    "first_loss": check.first_loss,
                    "ln_classes": check.ln_vocab,
                    "classes": classes,
                    "delta_nats": check.delta,
                    "random_target_delta_nats": round(any_target, 6),
                },
                fix="look for a scale on the logits (a temperature < 1, missing 1/sqrt(d)), inputs far from "
                "unit scale, or a custom init with a large std; the head should start near uniform",
            )
