"""Padding that leaks into the real tokens' outputs (issue 32): the first training forward of a model given token
ids with padding is replayed with the padding changed; the outputs at the real positions (or, for a model with
one output per sequence, of the rows that hold padding) must stay the same.

Where the padding is: a declared pad token (a Hugging Face ``config.pad_token_id``), else read on the ids
themselves: every padded row ends with a run of one id (an ``nn.Embedding``'s ``padding_idx`` when the model has
one) that occurs nowhere else, at least two rows are padded and the rows' lengths differ. The padding changes to
another token id when the pad token is declared (the mask comes with the ids); when it is read on the ids, one
more pad column is appended instead, keeping its id (a model may find its padding by the id, or rely on a
``padding_idx`` zero vector; a mask given with the ids grows with it), and a model that cannot take a longer
batch (a position table as long as it) is replayed on the rows that end with padding with one pad column fewer.

They change when the ``attention_mask`` was not passed (or does not mask the padding), or when a recurrent
model's last time step is read for every row (``out[:, -1]``, a padding step for every shorter row). The line is
the first op of the user's forward whose output moves while its inputs did not (the indexing of the last step),
else the call of the first layer that does (an attention without its padding mask), else the forward call."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.loss_mask import _trailing_run
from expkit.doctor.checks.perturb import _changed, _first_cause, _Replay
from expkit.doctor.findings import argument_made_at, user_frame, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe

MIN_PADDED_ROWS = 2


def _ids_and_place(ev: ForwardEvent) -> tuple[torch.Tensor, str | int] | None:
    """The token ids of a forward and where they were passed (a keyword name or a positional index)."""
    ids = ev.kwargs.get("input_ids")
    if isinstance(ids, torch.Tensor):
        return ids, "input_ids"
    if ev.inputs and isinstance(ev.inputs[0], torch.Tensor):
        return ev.inputs[0], 0
    return None


def _padding_idx(module: nn.Module) -> int | None:
    for m in module.modules():
        if isinstance(m, nn.Embedding) and m.padding_idx is not None:
            return int(m.padding_idx) % m.num_embeddings
    return None


def _inferred_padding(ids: torch.Tensor, pad: int | None) -> tuple[int, torch.Tensor] | None:
    """(pad id, padded positions) read on the ids: each padded row ends with a run of ``pad`` (given, or the id
    that ends most rows), the id occurs nowhere else, >= ``MIN_PADDED_ROWS`` rows hold padding and not all rows
    are equally long."""
    if ids.shape[0] < 2 or ids.shape[1] < 3:
        return None
    last = ids[:, -1]
    chosen = pad is None
    if pad is None:
        values, counts = torch.unique(last, return_counts=True)
        pad = int(values[int(counts.argmax())])
    run = _trailing_run(ids) & (last == pad)[:, None]
    lengths = ids.shape[1] - run.sum(1)
    padded_rows = int((lengths < ids.shape[1]).sum())
    if padded_rows < MIN_PADDED_ROWS or bool((lengths == 0).any()) or int(lengths.unique().numel()) < 2:
        return None
    if chosen and int((run.sum(1) >= 2).sum()) < MIN_PADDED_ROWS:
        # an id read on the ids alone is padding when it fills two or more positions of at least two rows:
        # random tokens end rows with runs of one (a run of two has the odds 1/vocabulary per row)
        return None
    if bool(((ids == pad) & ~run).any()):
        return None  # the id is also a real token: not padding
    return pad, run


def _declared_padding(ids: torch.Tensor, pad: int) -> torch.Tensor | None:
    """The padded positions of a declared pad id: the run of it that ends a row (right padding) or starts it
    (left padding). None when the id also sits inside a row (random ids that happen to hit it, a pad reused as a
    token: not padding) or fewer than ``MIN_PADDED_ROWS`` rows hold padding (judged at a later batch)."""
    trail = _trailing_run(ids) & (ids[:, -1] == pad)[:, None]
    lead = torch.flip(_trailing_run(torch.flip(ids, [1])), [1]) & (ids[:, 0] == pad)[:, None]
    padded = trail | lead
    if bool(((ids == pad) & ~padded).any()):
        return None
    if int((padded.any(1) & ~padded.all(1)).sum()) < MIN_PADDED_ROWS:
        return None
    return padded


@register
class PaddingChangesOutput(Check):
    """A model given token ids with padding (a declared pad token, or a trailing run of one id in rows of
    different lengths), replayed with the padding changed: the outputs at the real positions must not move."""

    name = "padding_changes_output"

    def __init__(self) -> None:
        self.tested: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not (ev.training and ev.grad_enabled) or id(ev.module) in self.tested:
            return
        found = _ids_and_place(ev)
        if found is None:
            return
        ids, place = found
        if ids.is_floating_point() or ids.dtype == torch.bool or ids.dim() != 2:
            return
        config = getattr(ev.module, "config", None)
        pad = getattr(config, "pad_token_id", None)
        vocab = getattr(config, "vocab_size", None)
        append = False
        if isinstance(pad, int) and isinstance(vocab, int) and vocab >= 3:
            padded = _declared_padding(ids, pad)
            if padded is None:
                return  # the pad id is a real token in this batch, or too few rows hold padding to judge
            other = (pad + 1) % vocab
        else:
            idx = _padding_idx(ev.module)
            inferred = _inferred_padding(ids, idx)
            if inferred is None:
                return
            pad, padded = inferred
            # the padding grows by one column and keeps its id: a model may rely on the pad embedding being zero
            # (padding_idx) or find its padding by the id itself (tokens != pad), so an id swapped for a real
            # token would be real to it
            append = True
            other = int(ids[~padded][0])
        rows = padded.any(1) & ~padded.all(1)
        if not bool(rows.any()):
            return  # no row with both padding and real tokens
        self.tested.add(id(ev.module))
        seen = _Padding(ids, place, padded, rows, int(pad), other, append)
        try:
            self._replay(probe, ev, seen, shrink=False)
            return
        except (RuntimeError, IndexError, ValueError, NotImplementedError):
            # a model that cannot take a longer batch (a position table as long as the batch): one pad column
            # fewer instead, on the rows that end with padding
            if not append:
                return
        try:
            self._replay(probe, ev, seen, shrink=True)
        except (RuntimeError, IndexError, ValueError, NotImplementedError):
            return

    def _run(self, ev: ForwardEvent, seen: _Padding, shrink: bool) -> tuple[Any, Any, Any, Any, _Differs] | None:
        """Replay the forward as given and with the padding changed: both outputs, both runs' op records and the
        comparison of the variant; None when the variant cannot be built or a replay gives no tensor."""
        variant = _variant(ev, seen, shrink)
        if variant is None:
            return None
        replay = _Replay(ev.module, variant.base_kwargs)
        # a batch of another length draws other dropout masks from the same seed: those replays run in eval mode
        modes = [(m, m.training) for m in ev.module.modules()] if seen.append or shrink else []
        try:
            for m, _ in modes:
                m.training = False
            oa, _ = replay(variant.base_inputs, record_ops=True)
            events_a = replay.events
            replay.kwargs = variant.kwargs
            ob, _ = replay(variant.inputs, record_ops=True)
        finally:
            for m, mode in modes:
                m.training = mode
        if oa is None or ob is None:
            return None
        return oa, ob, events_a, replay.events, _Differs(variant, shrink, seen.append)

    def _confirmed(self, ev: ForwardEvent, kept: _Padding) -> bool:
        """The output moves with the pad id kept too: one more pad column, else (a position table as long as the
        batch) one fewer on the rows that end with padding; a model that can take neither keeps the finding."""
        for shrink in (False, True):
            try:
                run = self._run(ev, kept, shrink)
            except (RuntimeError, IndexError, ValueError, NotImplementedError):
                continue
            return run is not None and run[4](run[0], run[1])
        return True

    def _replay(self, probe: Probe, ev: ForwardEvent, seen: _Padding, *, shrink: bool) -> None:
        run = self._run(ev, seen, shrink)
        if run is None:
            return
        oa, ob, events_a, events_b, differs = run
        if not differs(oa, ob):
            return
        # one output per row from a declared pad id swapped for a real token: a classifier that pools the last token
        # before the first pad id (GPT-2's) reads the swap as a longer sequence. Confirmed with the pad id kept and
        # one more pad column (the mask grows with it): a model that masks its padding keeps still
        if not seen.append and not differs.per_position(oa) and not self._confirmed(ev, replace(seen, append=True)):
            return
        cause = _first_cause(events_a, events_b, differs)
        where = None
        if cause is not None:
            where = cause[1] if cause[0] == "op" else user_line_of(cause[2])
            where = where if where[0] is not None else None
        self._report(probe, ev, seen, shrink, where)

    def _report(
        self, probe: Probe, ev: ForwardEvent, seen: _Padding, shrink: bool, where: tuple[Any, Any] | None
    ) -> None:
        mask = ev.kwargs.get("attention_mask")
        batch = int(seen.ids.shape[0])
        call = user_frame()
        if mask is not None and call[0] is not None and (where is None or where == call):
            # a mask was given and did not mask: the line that made it, not the model's call
            made = argument_made_at(call[0], call[1], "attention_mask")
            where = (call[0], made) if made is not None else where
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the outputs of real tokens change when only the padding changes ({int(seen.rows.sum())} of "
            f"{batch} rows hold padding, pad id {seen.pad}): the model reads the padding"
            + (
                " (no attention_mask was passed)"
                if mask is None and not seen.append and getattr(ev.module, "config", None) is not None
                else " (the attention_mask does not mask it)"
                if mask is not None
                else " (a padded position is read, or attended, for rows shorter than the batch)"
            ),
            evidence={
                "rows_with_padding": int(seen.rows.sum()),
                "rows": batch,
                "pad_token_id": seen.pad,
                "attention_mask_given": mask is not None,
                "padding": "one pad column fewer"
                if shrink
                else "one more pad column"
                if seen.append
                else "pad ids changed",
            },
            fix="pass the attention_mask (1 for real tokens, 0 for padding) or a key_padding_mask; for a recurrent "
            "model read each row's last real step (out[range(B), lengths - 1]) or pack the batch "
            "(pack_padded_sequence)",
            where=where,
        )


@dataclass(frozen=True)
class _Padding:
    """Where a forward's padding is: the ids and where they were passed, the padded positions, the rows that
    hold both padding and real tokens, the pad id, a real id, and whether it is judged by one more pad column
    (padding read on the ids) instead of changed pad ids (a declared pad token)."""

    ids: torch.Tensor
    place: str | int
    padded: torch.Tensor
    rows: torch.Tensor
    pad: int
    other: int
    append: bool


@dataclass(frozen=True)
class _Variant:
    """The two forwards a replay compares: the batch as seen (``base_*``) and with its padding changed; the
    padded positions and rows of the rows replayed, and ``(B, T)`` of the base batch."""

    base_inputs: tuple[Any, ...]
    base_kwargs: dict[str, Any]
    inputs: tuple[Any, ...]
    kwargs: dict[str, Any]
    padded: torch.Tensor
    rows: torch.Tensor
    shape: tuple[int, int]


def _variant(ev: ForwardEvent, seen: _Padding, shrink: bool) -> _Variant | None:
    B, T = seen.ids.shape
    padded, rows = seen.padded, seen.rows
    if shrink:  # only the rows whose last column is padding, replayed with and without that column
        sel = padded[:, -1]
        if not bool(sel.any()) or T < 4:
            return None

        def take(v: Any, cols: int) -> Any:  # a (B, T, ...) tensor given with the ids: those rows, cols
            if isinstance(v, torch.Tensor) and v.dim() >= 2 and tuple(v.shape[:2]) == (B, T):
                return v[sel, :cols]
            if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == B and v.shape[0] > 1:
                return v[sel]  # a per-row tensor (lengths, labels)
            return v

        return _Variant(
            tuple(take(v, T) for v in ev.inputs),
            {k: take(v, T) for k, v in ev.kwargs.items()},
            tuple(take(v, T - 1) for v in ev.inputs),
            {k: take(v, T - 1) for k, v in ev.kwargs.items()},
            padded[sel],
            rows[sel],
            (int(sel.sum()), T),
        )
    if seen.append:
        row = int(torch.nonzero(padded[:, -1]).reshape(-1)[0]) if bool(padded[:, -1].any()) else 0

        def grow(v: Any) -> Any:  # a (B, T, ...) tensor given with the ids gets one more padded column
            if isinstance(v, torch.Tensor) and v.dim() >= 2 and tuple(v.shape[:2]) == (B, T):
                col = v[row : row + 1, -1:].expand(B, 1, *v.shape[2:])
                return torch.cat([v, col], dim=1)
            return v

        inputs = tuple(grow(v) for v in ev.inputs)
        return _Variant(ev.inputs, ev.kwargs, inputs, {k: grow(v) for k, v in ev.kwargs.items()}, padded, rows, (B, T))
    changed = seen.ids.masked_fill(padded, seen.other)
    inputs, kwargs = ev.inputs, dict(ev.kwargs)
    if seen.place == "input_ids":
        kwargs["input_ids"] = changed
    else:
        inputs = (changed, *ev.inputs[1:])
    return _Variant(ev.inputs, ev.kwargs, inputs, kwargs, padded, rows, (B, T))


class _Differs:
    """Whether a replayed output moved at the real positions (per-position outputs) or in the padded rows (one
    output per row), for the variant's shape."""

    def __init__(self, variant: _Variant, shrink: bool, append: bool) -> None:
        self.B, self.T = variant.shape
        self.real, self.rows = ~variant.padded, variant.rows
        self.shrink, self.append = shrink, append

    def per_position(self, p: torch.Tensor) -> bool:
        """The output holds one entry per position (B, T, ...), not one per row."""
        return p.dim() >= 2 and p.shape[0] == self.B and p.shape[1] == self.T

    def __call__(self, p: torch.Tensor, q: torch.Tensor) -> bool:
        B, T, real = self.B, self.T, self.real
        if p.dim() >= 2 and p.shape[0] == B and p.shape[1] == T and q.dim() == p.dim() and q.shape[0] == B:
            if self.shrink and q.shape[1] == T - 1 and q.shape[2:] == p.shape[2:]:
                keep = real[:, : T - 1]
                return _changed(p[:, : T - 1][keep], q[keep])
            if q.shape[1] in (T, T + int(self.append)) and q.shape[2:] == p.shape[2:]:
                return _changed(p[real], q[:, :T][real])
            return False
        if p.dim() >= 1 and p.shape[0] == B and p.shape == q.shape:
            return _changed(p[self.rows], q[self.rows])
        return False
