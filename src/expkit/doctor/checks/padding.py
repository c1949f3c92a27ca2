"""Padding that leaks into the real tokens' outputs (issue 32): the first training forward of a model that
declares its pad token (a Hugging Face ``config.pad_token_id``) on a batch with padding is replayed with the
padded positions' ids changed; the outputs at the real positions (or of the rows that hold padding, for a
sequence classifier) must stay the same. They change when the ``attention_mask`` was not passed (or does not
mask the padding): every real token attends to the padding, so a prediction depends on how much padding its
batch needed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import _changed, _Replay

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe


def _ids_and_place(ev: ForwardEvent) -> tuple[torch.Tensor, str | int] | None:
    """The token ids of a forward and where they were passed (a keyword name or a positional index)."""
    ids = ev.kwargs.get("input_ids")
    if isinstance(ids, torch.Tensor):
        return ids, "input_ids"
    if ev.inputs and isinstance(ev.inputs[0], torch.Tensor):
        return ev.inputs[0], 0
    return None


@register
class PaddingChangesOutput(Check):
    """A model with a declared pad token, replayed with the ids at its padded positions changed: the outputs at
    the real positions must not move."""

    name = "padding_changes_output"

    def __init__(self) -> None:
        self.tested: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not (ev.training and ev.grad_enabled) or id(ev.module) in self.tested:
            return
        config = getattr(ev.module, "config", None)
        pad = getattr(config, "pad_token_id", None)
        vocab = getattr(config, "vocab_size", None)
        found = _ids_and_place(ev)
        if not isinstance(pad, int) or not isinstance(vocab, int) or vocab < 3 or found is None:
            return
        ids, place = found
        if ids.is_floating_point() or ids.dim() != 2:
            return
        padded = ids == pad
        rows = padded.any(1) & ~padded.all(1)
        if not bool(rows.any()):
            return  # no row with both padding and real tokens
        self.tested.add(id(ev.module))
        other = (pad + 1) % vocab
        changed = ids.masked_fill(padded, other)
        replay = _Replay(ev.module, ev.kwargs)
        oa, _ = replay(ev.inputs)
        if place == "input_ids":
            replay.kwargs = {**ev.kwargs, "input_ids": changed}
            ob, _ = replay(ev.inputs)
        else:
            ob, _ = replay((changed, *ev.inputs[1:]))
        if oa is None or ob is None or oa.shape != ob.shape:
            return
        if oa.dim() >= 2 and oa.shape[:2] == ids.shape:
            real = ~padded
            moved = _changed(oa[real], ob[real])
        elif oa.shape[0] == ids.shape[0]:
            moved = _changed(oa[rows], ob[rows])
        else:
            return
        if not moved:
            return
        mask = ev.kwargs.get("attention_mask")
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the outputs of real tokens change when only the padding changes ({int(rows.sum())} of "
            f"{ids.shape[0]} rows hold padding, pad id {pad}): the model attends to the padding"
            + (" (no attention_mask was passed)" if mask is None else " (the attention_mask does not mask it)"),
            evidence={
                "rows_with_padding": int(rows.sum()),
                "rows": int(ids.shape[0]),
                "pad_token_id": pad,
                "attention_mask_given": mask is not None,
            },
            fix="pass the tokenizer's attention_mask with the input_ids (model(**batch)), 1 for real tokens and "
            "0 for padding",
        )
