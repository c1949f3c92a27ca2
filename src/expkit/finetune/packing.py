"""Packing labelled conversations into fixed-length rows without losing their masks: best-fit decreasing (as TRL's
``bfd`` strategy), each conversation kept whole with its own labels, position ids restarting at 0 at every
conversation so that a model reading ``position_ids`` (flash-attention varlen, TRL's padding-free collator) does
not attend across a boundary, and the first label of every conversation masked (nothing predicts a
conversation's first token from the previous one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from expkit.errors import UsageError
from expkit.finetune.labels import IGNORE, ExampleLabels

__all__ = ["PackedRow", "pack_labelled", "trained_tokens_per_conversation"]


@dataclass(frozen=True)
class PackedRow:
    """One packed row: the conversations ``examples`` (indices into the input) laid end to end.

    ``seq_lengths[k]`` is the length of the k-th; ``position_ids`` restart at 0 at each.
    """

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    position_ids: tuple[int, ...]
    seq_lengths: tuple[int, ...]
    examples: tuple[int, ...]


def pack_labelled(labelled: Sequence[ExampleLabels], *, max_length: int) -> tuple[PackedRow, ...]:
    """Best-fit-decreasing packing of whole conversations into rows of at most ``max_length`` tokens.

    Args:
        labelled: ``LabelBuilder.build`` outputs (already truncated to the training length).
        max_length: tokens per row; a conversation longer than this is refused (truncate it first).

    Returns:
        The rows, longest conversations placed first, each into the fullest row that still has room.

    Raises:
        UsageError: ``max_length`` < 1, or a conversation longer than ``max_length`` (its index named).

    Example:
        >>> [r.seq_lengths for r in pack_labelled(labelled, max_length=8)]  # lengths 5, 3, 4, 2
        [(5, 3), (4, 2)]
    """
    if max_length < 1:
        raise UsageError(f"max_length must be >= 1, not {max_length}")
    too_long = [i for i, e in enumerate(labelled) if len(e.input_ids) > max_length]
    if too_long:
        raise UsageError(
            f"conversation {too_long[0]} has {len(labelled[too_long[0]].input_ids)} tokens > max_length {max_length}",
            hint="truncate with the LabelBuilder's max_length first (the audit checks the stop token survives)",
        )
    bins: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(labelled)), key=lambda k: -len(labelled[k].input_ids)):
        n = len(labelled[i].input_ids)
        fits = [b for b in range(len(bins)) if room[b] >= n]
        if fits:
            b = min(fits, key=lambda k: room[k])  # best fit: the row left with the least room
            bins[b].append(i)
            room[b] -= n
        else:
            bins.append([i])
            room.append(max_length - n)
    return tuple(_row(labelled, members) for members in bins)


def _row(labelled: Sequence[ExampleLabels], members: list[int]) -> PackedRow:
    ids: list[int] = []
    labels: list[int] = []
    positions: list[int] = []
    for i in members:
        e = labelled[i]
        ids += e.input_ids
        labels += [IGNORE, *e.labels[1:]]  # the first token of a conversation is predicted from nothing of its own
        positions += range(len(e.input_ids))
    return PackedRow(
        input_ids=tuple(ids),
        labels=tuple(labels),
        position_ids=tuple(positions),
        seq_lengths=tuple(len(labelled[i].input_ids) for i in members),
        examples=tuple(members),
    )


def trained_tokens_per_conversation(rows: Sequence[PackedRow]) -> dict[int, list[int]]:
    """Conversation index -> its trained token ids (sorted), read back from packed rows by ``seq_lengths``."""
    out: dict[int, list[int]] = {}
    for row in rows:
        start = 0
        for index, n in zip(row.examples, row.seq_lengths, strict=True):
            seg = range(start, start + n)
            out[index] = sorted(row.input_ids[k] for k in seg if row.labels[k] != IGNORE)
            start += n
    return out
