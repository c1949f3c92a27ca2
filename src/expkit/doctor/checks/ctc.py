"""CTC targets that hold the blank (issue 32): ``ctc_loss`` reads its ``blank`` index (0 unless given) as "no
symbol", so a target symbol encoded with that index is never a symbol to learn: a label encoder that numbers the
inventory from 0 while the loss keeps blank = 0 turns every occurrence of the first symbol into a gap, the loss
still falls and nothing warns (crnn-pytorch issue 34). Measured on the targets the loss was given, within each
target's length (padding past it is not read); named where the targets tensor was made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.loss_mask import made_line

if TYPE_CHECKING:
    from expkit.doctor.probe import LossEvent, Probe


def _read_symbols(targets: torch.Tensor, lengths: Any) -> torch.Tensor | None:
    """The target symbols CTC reads: a padded (N, S) batch up to each row's length, a 1-D concatenation up to the
    lengths' sum; None when the lengths do not fit the targets."""
    try:
        n = torch.as_tensor(lengths, device=targets.device).reshape(-1).long()
    except (TypeError, ValueError, RuntimeError):
        return None
    if targets.dim() == 2 and n.numel() == targets.shape[0] and (int(n.max()) if n.numel() else 0) <= targets.shape[1]:
        return targets[torch.arange(targets.shape[1], device=targets.device)[None, :] < n[:, None]]
    if targets.dim() == 1 and int(n.sum()) <= targets.numel():
        return targets[: int(n.sum())]
    return None


@register
class CtcTargetIsBlank(Check):
    """Target symbols of a ``ctc_loss`` equal to its blank index."""

    name = "ctc_target_is_blank"

    def __init__(self) -> None:
        self.reported = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if self.reported or ev.function != "ctc_loss" or not isinstance(ev.target, torch.Tensor):
            return
        if ev.target.is_floating_point() or ev.target.dtype == torch.bool:
            return
        blank = int(ev.kwargs.get("blank", 0))
        symbols = _read_symbols(ev.target.detach(), ev.kwargs.get("target_lengths"))
        if symbols is None or symbols.numel() == 0:
            return
        hits = int((symbols == blank).sum())
        if hits == 0:
            return
        self.reported = True
        made = made_line(probe, ev.target)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{hits} of the {symbols.numel()} target symbols of ctc_loss are its blank index {blank}: CTC "
            "reads the blank as 'no symbol', so that symbol is never learned (the label encoder numbers the symbols "
            "from the blank's index)",
            evidence={"blank": blank, "blank_in_targets": hits, "target_symbols": int(symbols.numel())},
            fix=f"number the symbols from {blank + 1} (keep {blank} for the blank) and decode with - 1, or pass "
            "blank=<an index no symbol uses> to CTCLoss",
            where=made,
        )
