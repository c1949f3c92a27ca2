"""A reshape that reorders axes (issue 32): ``view``/``reshape`` to a shape that is a permutation of the
tensor's own shape (``(B, C, L)`` -> ``(B, L, C)``), or a merge of its axes in another order (attention heads
merged without a transpose: ``(B, H, T, hd)`` -> ``(B, T, H * hd)``), keeps the memory order, so each new "row"
mixes channels and positions; ``permute``/``transpose`` was meant. Seen on the training path (a tensor that
requires grad, inside a module's forward) during the watched steps, in the user's own code (a library's reshape
is a split and merge of axes whose sizes may coincide), named at the line that reshaped.

And a loss input flattened from the wrong axis (``class_axis_flattened``): a channels-first output (B, C, H, W)
viewed as (-1, C) puts C consecutive values of one class map (C positions) in each row, not the C class scores of
one position (Stack Overflow 57155970). Judged on the tensor ``cross_entropy`` receives: a view/reshape outside
the forward to two axes whose second is the input's axis 1 while its last axis is another size."""

from __future__ import annotations

import itertools
import math
import operator
import sys
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import LossEvent, Probe


def _reorders(before: tuple[int, ...], after: tuple[int, ...]) -> bool:
    """``after`` holds the same sizes as ``before`` in another order (3+ axes; sizes of 1 left out)."""
    a = tuple(n for n in before if n != 1)
    b = tuple(n for n in after if n != 1)
    return len(a) >= 2 and len(before) >= 3 and a != b and sorted(a) == sorted(b)


def _boundaries(shape: tuple[int, ...]) -> set[int]:
    """The prefix products of ``shape``: where its axes end in memory order."""
    return set(itertools.accumulate(shape, operator.mul))


def _merges_reordered(before: tuple[int, ...], after: tuple[int, ...]) -> tuple[int, ...] | None:
    """``after`` merges ``before``'s axes taken in another order, and is no merge of them in their own order:
    ``(B, H, T, hd)`` -> ``(B, T, H * hd)``, heads merged without moving them next to ``hd`` first; ``(B, C, T, H,
    W)`` -> ``(B * T, C, H * W)``, frames merged into the batch across the channels. Returns that other order
    (the batch axis kept first where it can be), else None (splits, merges in order, 6+ axes are not judged)."""
    if not 4 <= len(before) <= 5 or len(after) >= len(before) or not after:
        return None
    wanted = _boundaries(after)
    if wanted <= _boundaries(before):
        return None  # a merge of adjacent axes: memory order is what it reads
    if after[0] == before[0]:
        orders: Any = ((before[0], *o) for o in itertools.permutations(before[1:]))
    else:  # the batch axis merged with another one: any order of all the axes
        orders = itertools.permutations(before)
    return next((shape for shape in orders if shape != before and wanted <= _boundaries(shape)), None)


def _flattens_from_the_wrong_axis(before: tuple[int, ...], after: tuple[int, ...]) -> bool:
    """A (B, C, *S) tensor (more than one position) flattened to (N, C) rows while its last axis is not C."""
    return (
        len(before) >= 3
        and len(after) == 2
        and after[1] == before[1] > 1
        and before[-1] != before[1]
        and math.prod(before[2:]) > 1
    )


def _called_by_user(frame: Any) -> bool:
    """The reshape was written in the user's own code: a library's reshape whose sizes happen to be a
    reordering is a split and merge of axes (torch's multi-head attention views (T, B, E) as (T, B * heads,
    E / heads), which is (32, 16, 64) -> (32, 64, 16) at B=16, heads=4, E=64)."""
    from expkit.diagnose.tracebacks import classify_frame

    path = frame.f_code.co_filename
    return not path.startswith("<") and classify_frame(path) == "yours"


@register
class ReshapeReordersAxes(Check):
    """``view``/``reshape`` on the training path to a shape that is a reordering of the tensor's own sizes
    (``(B, C, L)`` -> ``(B, L, C)``): memory order is kept, so values of different axes are mixed;
    ``permute``/``transpose`` was meant."""

    name = "reshape_reorders_axes"
    reports: ClassVar[dict[str, str]] = {
        "class_axis_flattened": "cross_entropy given (N, C, H, W) logits viewed as (-1, C) rows (C not moved last).",
    }

    def __init__(self) -> None:
        # id(flattened tensor) -> (the reshaped tensor's shape, the result's shape, the line): loss candidates
        self.flattened: dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[str | None, int | None]]] = {}
        self.flat_reported = False

    def start(self, probe: Probe) -> None:
        for owner, attr in ((torch.Tensor, "view"), (torch.Tensor, "reshape"), (torch, "reshape")):
            probe.patch(owner, attr, self._wrap(probe))

    def _wrap(self, probe: Probe) -> Any:
        check = self

        def make(original: Any) -> Any:
            def reshape(tensor: Any, *args: Any, **kwargs: Any) -> Any:
                out = original(tensor, *args, **kwargs)
                if (
                    probe.active
                    and probe.inside_forward
                    and isinstance(tensor, torch.Tensor)
                    and isinstance(out, torch.Tensor)
                    and tensor.requires_grad
                    and (
                        _reorders(tuple(tensor.shape), tuple(out.shape))
                        or _merges_reordered(tuple(tensor.shape), tuple(out.shape))
                    )
                    and _called_by_user(sys._getframe(1))
                ):
                    check._report(probe, tuple(tensor.shape), tuple(out.shape))
                elif (
                    probe.active
                    and not probe.inside_forward
                    and not check.flat_reported
                    and isinstance(tensor, torch.Tensor)
                    and isinstance(out, torch.Tensor)
                    and tensor.requires_grad
                    and _flattens_from_the_wrong_axis(tuple(tensor.shape), tuple(out.shape))
                    and _called_by_user(sys._getframe(1))
                ):
                    if len(check.flattened) > 64:
                        check.flattened.clear()
                    check.flattened[id(out)] = (tuple(tensor.shape), tuple(out.shape), user_frame(2))
                return out

            return reshape

        return make

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        found = self.flattened.get(id(ev.input)) if ev.function in ("cross_entropy", "nll_loss") else None
        if found is None or self.flat_reported:
            return
        before, after, where = found
        self.flat_reported = True
        probe.report(
            kind="bug",
            check="class_axis_flattened",
            message=f"the {ev.function} input was reshaped from {list(before)} to {list(after)}: its class axis "
            f"is axis 1 ({before[1]}), but view/reshape keeps the memory order, so each row holds {after[1]} "
            f"consecutive values of the last axis ({before[-1]} positions of one class map), not the class scores "
            "of one position",
            evidence={"shape_before": list(before), "shape_after": list(after)},
            fix="move the class axis last first: logits.permute(0, 2, 3, 1).reshape(-1, C), or pass the "
            f"(N, C, ...) logits to {ev.function} as they are with the (N, ...) target",
            where=where if where[0] is not None else None,
        )

    def _report(self, probe: Probe, before: tuple[int, ...], after: tuple[int, ...]) -> None:
        meant = _merges_reordered(before, after)
        what = (
            f"a merge of its axes taken in another order ({list(meant)})"
            if meant is not None
            else "the same sizes in another order"
        )
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a tensor of shape {list(before)} was reshaped to {list(after)}, {what}: view/reshape keeps "
            "the memory order, so each new row mixes values of different axes (channels with positions, heads "
            "with positions) instead of moving the axes",
            evidence={"shape_before": list(before), "shape_after": list(after)},
            fix="swap axes with permute/transpose (x.permute(0, 2, 1) or x.transpose(1, 2)), then .contiguous() "
            "if a view of it is needed",
            where=user_frame(3),
        )
