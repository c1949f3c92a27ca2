"""Per-sample weights multiplied into a loss that was already reduced (issue 32): co-teaching's small-loss
selection ``torch.sum(keep * F.cross_entropy(out, y)) / n`` with the default ``reduction='mean'``, a focal or
importance weight ``(w * criterion(out, y)).mean()``: the loss is one number, so the weights do not weight the
samples, they only rescale the whole batch's loss (by their sum or mean) and the selection is a silent no-op.
Measured on the backpropagated graph: a product whose one factor is the value a loss function returned, reduced
to a scalar over a batch of ``n`` samples, and whose other factor holds one value per sample (``n`` of them).
Named at the loss call, where ``reduction='none'`` belongs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.findings import RawStack
    from expkit.doctor.probe import BackwardEvent, LossEvent, Probe

MAX_NODES = 20_000  # one graph walk
MAX_LOSSES = 256  # reduced losses remembered between two backwards
PRODUCTS = ("MulBackward0", "DivBackward0")


@register
class WeightsOnReducedLoss(Check):
    """A per-sample weight vector (one value per sample of the loss's batch) multiplied into the scalar a loss
    function returned: the samples are not weighted, the batch's loss is rescaled."""

    name = "weights_on_reduced_loss"

    def __init__(self) -> None:
        self.losses: dict[int, tuple[int, RawStack, str]] = {}  # id(loss value's grad_fn) -> (batch, where, fn)
        self.keep: list[Any] = []  # the nodes themselves: their ids stay theirs while remembered
        self.reported = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        node = ev.value.grad_fn
        if self.reported or node is None or ev.value.dim() != 0 or ev.input.dim() < 1 or ev.input.shape[0] < 2:
            return
        if len(self.losses) < MAX_LOSSES:
            self.losses[id(node)] = (int(ev.input.shape[0]), raw_stack(3), ev.function)
            self.keep.append(node)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        losses, self.losses, self.keep = self.losses, {}, []
        root = ev.tensor.grad_fn
        if self.reported or not losses or root is None:
            return
        seen, todo = {id(root)}, [root]
        while todo and len(seen) < MAX_NODES:
            node = todo.pop()
            nexts = [n for n, _ in getattr(node, "next_functions", ())]
            if type(node).__name__ in PRODUCTS:
                for i, nxt in enumerate(nexts[:2]):
                    found = losses.get(id(nxt)) if nxt is not None else None
                    if found is not None and self._per_sample(probe, node, i, found):
                        return
            for nxt in nexts:
                if nxt is not None and id(nxt) not in seen:
                    seen.add(id(nxt))
                    todo.append(nxt)

    def _per_sample(self, probe: Probe, node: Any, loss_side: int, found: tuple[int, RawStack, str]) -> bool:
        batch, stack, function = found
        try:  # the other factor, as autograd saved it for the product's backward
            weight = getattr(node, "_saved_self" if loss_side == 1 else "_saved_other", None)
        except RuntimeError:  # freed by an earlier backward
            return False
        if not isinstance(weight, torch.Tensor) or weight.dim() < 1 or weight.numel() != batch:
            return False
        self.reported = True
        kept = int((weight != 0).sum())
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{function} returned one number for its batch of {batch} (reduction 'mean' or 'sum'), and it "
            f"is multiplied by a tensor of {batch} per-sample values ({kept} non-zero): the weights do not weight "
            "the samples, they only rescale the whole batch's loss, so a sample selection or weighting is a "
            "silent no-op",
            evidence={"batch": batch, "weights": int(weight.numel()), "non_zero_weights": kept, "loss": function},
            fix=f"compute the per-sample loss ({function}(..., reduction='none')), weight it, then reduce "
            "(sum(w * loss) / n)",
            where=user_line_of(stack),
        )
        return True
