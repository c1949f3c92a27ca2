"""An embedding table looked up with another table's ids (issue 32): in a recommender's ``user_bias(item_ids)``,
a tagger's ``pos_embedding(word_ids)``, one id tensor indexes two tables of different sizes. It raises nothing
(the ids fit the smaller table, so they fit the larger one), and the larger table's rows past the smaller one's
size are never read: those users, tags or positions are never learned. Measured on the lookups of the watched
training forwards: a table whose every lookup used an id tensor that also indexed a smaller table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent


def _key(ids: torch.Tensor, step: int) -> tuple[Any, ...]:
    """The id tensor's identity across views (``ids.squeeze(1)`` of one storage read as one), within one step (a
    freed tensor's memory may hold another step's ids)."""
    return (step, ids.untyped_storage().data_ptr(), ids.storage_offset(), tuple(ids.shape), tuple(ids.stride()))


def _rows(table: nn.Module) -> int:
    weight = table.weight
    assert isinstance(weight, torch.Tensor)
    return int(weight.shape[0])


@register
class EmbeddingIndexedByOtherIds(Check):
    """Every training lookup of the watched steps, per table: the id tensors it was given and where. A table fed
    only id tensors that also indexed a smaller table reads none of its rows past that size."""

    name = "embedding_indexed_by_other_ids"

    def __init__(self) -> None:
        self.lookups: dict[int, tuple[nn.Module, list[tuple[Any, ...]], tuple[str | None, int | None]]] = {}
        self.done = False
        self.step = 0

    def start(self, probe: Probe) -> None:
        check = self

        def make(original: Any) -> Any:
            def forward(module: nn.Module, ids: Any, *args: Any, **kwargs: Any) -> Any:
                live = not check.done and not probe._in_check and module.training and torch.is_grad_enabled()
                if live and isinstance(ids, torch.Tensor):
                    check._note(module, ids)
                return original(module, ids, *args, **kwargs)

            return forward

        probe.patch(nn.Embedding, "forward", make)
        probe.patch(nn.EmbeddingBag, "forward", make)

    def _note(self, module: nn.Module, ids: torch.Tensor) -> None:
        if ids.is_floating_point() or ids.numel() == 0 or not module.weight.requires_grad:
            return
        entry = self.lookups.get(id(module))
        if entry is None:
            self.lookups[id(module)] = (module, [_key(ids, self.step)], user_frame(3))
        else:
            entry[1].append(_key(ids, self.step))

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.step += 1
        if self.done or ev.index < probe.watch_steps:
            return
        self.done = True
        tables = [(_rows(m), keys, where) for m, keys, where in self.lookups.values()]
        for rows, keys, where in tables:
            smaller = [
                (o_rows, o_where) for o_rows, o_keys, o_where in tables if o_rows < rows and set(keys) <= set(o_keys)
            ]
            if not smaller:
                continue
            other_rows, o_where = min(smaller, key=lambda t: t[0])
            probe.report(
                kind="bug",
                check=self.name,
                message=f"an embedding of {rows} rows was looked up only with the id tensor that also indexes an "
                f"embedding of {other_rows} rows (line {o_where[1]}): its rows {other_rows}.."
                f"{rows - 1} are never read, so they are never trained (the ids of another table passed)",
                evidence={
                    "rows": rows,
                    "other_rows": other_rows,
                    "other_lookup_line": o_where[1],
                },
                fix="look each table up with its own ids (user ids for the user table, item ids for the item table)",
                where=where if where[0] is not None else None,
            )
            return
