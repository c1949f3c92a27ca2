"""The data each step sees: the same batch at every step (a ``next(iter(loader))`` outside the loop)
and labels that are the inputs themselves (next-token targets not shifted)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import CallEvent, ForwardEvent, LossEvent, Probe, StepEvent


def _fingerprint(x: torch.Tensor) -> tuple[Any, ...]:
    flat = x.detach().reshape(-1).double()
    return (tuple(x.shape), float(flat.sum()), float((flat * flat).sum()), float(flat[: min(64, flat.numel())].sum()))


@register
class SameBatch(Check):
    """The first training forward of each watched step, fingerprinted (shape, sum, sum of squares): the same
    fingerprint at two steps while a DataLoader with more than one batch exists means the loop reuses one batch.
    Full-batch training without a DataLoader is not flagged."""

    name = "same_batch"

    def __init__(self) -> None:
        self.prints: list[tuple[Any, ...]] = []
        self.taken_this_step = False
        self.iter_sites: list[tuple[str | None, int | None]] = []  # where each DataLoader iterator was made

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "loader.iter":
            from expkit.doctor.findings import user_frame

            self.iter_sites.append(user_frame(3))

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if self.taken_this_step or not (ev.training and ev.grad_enabled):
            return
        x = ev.first_tensor()
        if x is None or x.numel() == 0:
            return
        self.taken_this_step = True
        self.prints.append(_fingerprint(x))

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.taken_this_step = False
        if len(self.prints) < 2 or self.prints[-1] != self.prints[-2]:
            return
        batches = probe.dataloader_batches()
        if batches is None or batches < 2:
            return
        # a fresh iterator at every step, made at one line: that line restarts the loader
        fresh = len(self.iter_sites) >= 2 and self.iter_sites[-1] == self.iter_sites[-2] and self.iter_sites[-1][0]
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the model saw the same input batch at consecutive steps although a DataLoader holds {batches} "
            "batches: the loop is probably reusing one batch (next(iter(loader)) taken once, or a new iterator "
            "every step over an unshuffled loader)",
            evidence={"identical_steps": 2, "loader_batches": batches, "batch_shape": list(self.prints[-1][0])},
            fix="iterate the loader: `for x, y in loader:` (or keep one iterator and call next() on it)",
            where=self.iter_sites[-1] if fresh else None,
        )


@register
class LabelsNotShifted(Check):
    """For sequence models: the cross-entropy targets equal the token ids the model was given, position for
    position, so each position is asked to predict itself instead of the next token."""

    name = "labels_not_shifted"

    def __init__(self) -> None:
        self.ids: torch.Tensor | None = None

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = ev.first_tensor()
        self.ids = x if x is not None and not x.is_floating_point() and x.dim() == 2 and x.shape[1] > 1 else None

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        ids, y = self.ids, ev.target
        if ids is None or ev.function != "cross_entropy" or not isinstance(y, torch.Tensor) or y.is_floating_point():
            return
        if y.numel() != ids.numel() or y.device != ids.device:
            return
        y2 = y.reshape(ids.shape)
        keep = y2 != ev.kwargs.get("ignore_index", -100)
        if int(keep.sum()) == 0 or not bool((y2[keep] == ids[keep]).all()):
            return
        shifted = ids[:, 1:] == y2[:, :-1]
        probe.report(
            kind="bug",
            check=self.name,
            message="the cross-entropy targets are the input tokens themselves (position t predicts token t): "
            "the labels were not shifted, so the model learns to copy and the loss drops to ~0",
            evidence={
                "positions_equal_to_input": int(keep.sum()),
                "positions": y.numel(),
                "next_token_agreement": float(shifted.float().mean()),
            },
            fix="predict the next token: logits[:, :-1] against ids[:, 1:] (Hugging Face causal LMs shift "
            "labels=input_ids themselves; a hand-written loss must shift)",
        )
