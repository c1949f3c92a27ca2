"""A loss that reads the padded positions of a model's output (issue 32): a sentence embedding averaged over
every position of ``last_hidden_state`` without the ``attention_mask`` (BERT-whitening#13), a max over padding,
a token loss over pad positions. The attention mask keeps padding out of the real tokens, but the outputs *at*
the padded positions are still computed, and a loss that reads them trains on them.

Measured by the gradient, not read from the pooling code: a training forward of a top-level model called with
an ``attention_mask`` that holds padding (and no ``labels``: the model's own loss is judged by ``loss_mask``) has
its outputs of shape (batch, sequence, ...) watched; their gradient at the positions the mask marks 0 must be
exactly zero (a masked mean multiplies them by 0, a [CLS] pooling never reads them). The line is the first op of
the user's code that took the output after the forward (the ``.mean(dim=1)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import FirstUserOp, close_mode
from expkit.doctor.findings import user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, ForwardEvent, Probe, StepEvent

REL_TOL = 1e-6  # a padded position's gradient above this share of the real positions' largest is read by the loss
MAX_FORWARDS = 2  # training forwards watched (each adds a gradient hook per output)


class _FirstUse(FirstUserOp):
    """After the forward: the first user op that takes one of the watched outputs as an argument."""

    def __init__(self, watched: set[int]) -> None:
        super().__init__()
        self.watched = watched

    def match(self, func: Any, args: tuple[Any, ...], out: Any) -> bool | None:
        return True if any(isinstance(a, torch.Tensor) and id(a) in self.watched for a in args) else None


def _padding_mask(mask: Any) -> torch.Tensor | None:
    """A 2-D 0/1 attention mask with at least one padded and one real position, as bool (True where padded)."""
    if not isinstance(mask, torch.Tensor) or mask.dim() != 2:
        return None
    m = mask.detach()
    if not bool(((m == 0) | (m == 1)).all()):
        return None
    pad = m == 0
    return pad if bool(pad.any()) and bool((~pad).any()) else None


def _sequence_outputs(output: Any, shape: tuple[int, ...]) -> list[torch.Tensor]:
    """The output tensors (a tensor, a tuple, a ModelOutput's values) of shape (batch, sequence, ...) with grad."""
    if isinstance(output, torch.Tensor):
        values: list[Any] = [output]
    elif isinstance(output, dict):
        values = list(output.values())
    elif isinstance(output, (list, tuple)):
        values = list(output)
    else:
        return []
    return [
        v
        for v in values
        if isinstance(v, torch.Tensor) and v.requires_grad and v.dim() >= 2 and tuple(v.shape[:2]) == shape
    ]


@register
class LossReadsPadding(Check):
    """The gradient of the loss reaches a model's outputs at the positions its attention mask marks as padding."""

    name = "loss_reads_padding"

    def __init__(self) -> None:
        self.forwards = 0
        self.mode: _FirstUse | None = None
        self.seen: list[tuple[str, torch.Tensor, float, float, tuple[str | None, int | None]]] = []
        self.where: tuple[str | None, int | None] = (None, None)
        self.done = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if self.done or self.forwards >= MAX_FORWARDS or not (ev.training and ev.grad_enabled):
            return
        if "labels" in ev.kwargs or probe.inside_forward:
            return
        pad = _padding_mask(ev.kwargs.get("attention_mask"))
        if pad is None:
            return
        outputs = _sequence_outputs(ev.output, tuple(pad.shape))
        if not outputs:
            return
        self.forwards += 1
        self._close()
        self.where = user_frame()
        self.mode = _FirstUse({id(t) for t in outputs})
        self.mode.__enter__()
        name = type(ev.module).__name__
        for t in outputs:
            t.register_hook(lambda g, name=name, pad=pad: self._measure(name, g, pad))

    def _measure(self, name: str, grad: torch.Tensor, pad: torch.Tensor) -> None:
        # a gradient hook runs inside the program's backward, outside the probe's guard: it must never raise
        try:
            g = grad.detach().abs()
            g = g.reshape(*g.shape[:2], -1).amax(-1)
            pad = pad.to(g.device)
            self.seen.append((name, pad, float(g[pad].max()), float(g[~pad].max()), self._line()))
        except (RuntimeError, IndexError, ValueError):  # a gradient of another shape or device: not judged
            return

    def _line(self) -> tuple[str | None, int | None]:
        return self.mode.line if self.mode is not None and self.mode.line is not None else self.where

    def _close(self) -> None:
        if self.mode is not None and self.mode.on:
            close_mode(self.mode)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        self._close()

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        self._close()
        self._judge(probe)

    def finish(self, probe: Probe) -> None:
        self._close()
        self._judge(probe)

    def _judge(self, probe: Probe) -> None:
        if self.done:
            return
        for name, pad, at_pad, at_real, where in self.seen:
            if at_real > 0 and at_pad > REL_TOL * at_real:
                self.done = True
                probe.report(
                    kind="bug",
                    check=self.name,
                    message=f"the loss reads {name}'s outputs at padded positions: their gradient is "
                    f"{at_pad:.3g} (the real tokens' largest {at_real:.3g}) where the attention_mask is 0 "
                    f"({int(pad.sum())} of {pad.numel()} positions), so the padding is trained on (a mean or max "
                    "over the sequence without the mask)",
                    evidence={"max_grad_at_padding": at_pad, "max_grad_at_tokens": at_real, "padded": int(pad.sum())},
                    fix="weight by the mask: (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True); or mask the "
                    "padded positions out of the loss",
                    where=where if where[0] is not None else None,
                )
                return
        self.seen = []
