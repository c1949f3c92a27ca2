"""What a loss counts and how it is scaled, read from the loss call and the backward's graph (issue 32):

- ``ignored_real_class``: a cross-entropy told to ignore a class index the model predicts (``ignore_index=0``
  where tag 0 is a real tag) while the ignored positions hold real input tokens, not padding: the most common
  class of a tagger is never trained. Padding shows as one repeated id at the ignored positions (the pad id) and
  as one run at each row's end (or start); real tokens show as many different ids, anywhere in the row.
- ``ddp_loss_divided_by_world``: under DistributedDataParallel, which already averages gradients over the ranks,
  the tensor given to the one backward of a step is a loss divided by the world size: every update is
  world-size times too small.

The first is named at the loss call, the second at the line that divided (anomaly mode, on during the watch,
records where each graph node was made), else at the backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.graph_kept import made_where
from expkit.doctor.checks.ranks import _world
from expkit.doctor.findings import keyword_line, user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, ForwardEvent, LossEvent, Probe, StepEvent

MIN_IGNORED_SHARE = 0.05  # a class ignored at fewer positions than this is not what starves training
MIN_DISTINCT_IDS = 3  # ignored positions holding this many different input ids are real tokens, not padding


def _runs_at_row_ends(ignored: torch.Tensor) -> bool:
    """Whether every row of a (rows, positions) mask (or every column: a time-major batch) is ignored only in one
    run at its end or its start: padding. A next-token model's targets are its inputs shifted, so the input at a
    row's first padded target is the row's last real token: ids alone would read that run as real tokens."""
    for rows in (ignored, ignored.T):
        suffix = (rows[:, 1:] >= rows[:, :-1]).all(dim=1)
        prefix = (rows[:, 1:] <= rows[:, :-1]).all(dim=1)
        if bool((suffix | prefix).all()):
            return True
    return False


@register
class IgnoredRealClass(Check):
    """A cross-entropy whose ``ignore_index`` is a class the model predicts (0 <= index < classes), at 5 %+ of
    the targets, where the input tokens at the ignored positions are real tokens (3+ different ids), not
    padding (one pad id, in one run at each row's end or start): a real class is dropped from the loss and never
    trained."""

    name = "ignored_real_class"

    def __init__(self) -> None:
        self.ids: torch.Tensor | None = None

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = ev.first_tensor()
        if x is not None and not x.is_floating_point() and x.dim() == 2:
            self.ids = x

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.ids = None

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        index = ev.kwargs.get("ignore_index")
        y, ids = ev.target, self.ids
        if ev.function not in ("cross_entropy", "nll_loss") or not isinstance(index, int) or index < 0:
            return
        if not isinstance(y, torch.Tensor) or y.is_floating_point() or ids is None or y.numel() != ids.numel():
            return
        classes = ev.input.shape[1] if ev.input.dim() > 1 else ev.input.shape[0]
        if index >= classes:
            return  # an index past the classes (a pad id outside the label set) drops nothing the model predicts
        ignored = y.reshape(-1) == index
        share = float(ignored.float().mean())
        if share < MIN_IGNORED_SHARE:
            return
        distinct = int(torch.unique(ids.reshape(-1).to(y.device)[ignored]).numel())
        if distinct < MIN_DISTINCT_IDS or _runs_at_row_ends(ignored.reshape(ids.shape)):
            return
        file, line = user_frame(3)
        origin = keyword_line(file, ("ignore_index",), line)  # where the index was given (a criterion built earlier)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the cross-entropy ignores class {index} (ignore_index={index}), a class the model predicts, "
            f"at {share:.0%} of the targets, and the input there holds {distinct} different token ids: real tokens, "
            "not padding. That class is never trained",
            evidence={"ignore_index": index, "classes": int(classes), "ignored_share": share, "distinct_ids": distinct},
            fix="give padding its own label (or -100, the default ignore_index) and leave ignore_index off the "
            "real classes",
            where=(file, origin) if file is not None and origin is not None else None,
        )


@register
class DdpLossDividedByWorld(Check):
    """Under DistributedDataParallel (which averages gradients over the ranks), the tensor given to a step's only
    backward is a loss divided by the world size: each update is world-size times too small."""

    name = "ddp_loss_divided_by_world"

    def __init__(self) -> None:
        self.losses: set[int] = set()  # id(grad_fn) of this window's loss-function outputs
        self.pending: tuple[tuple[str | None, int | None], float] | None = None

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if ev.value.grad_fn is not None:
            self.losses.add(id(ev.value.grad_fn))

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if ev.first_after_step:
            self.pending = None
        world = _ddp_world(probe)
        node = ev.tensor.grad_fn
        if world is None or node is None:
            return
        divisor = _divisor(node)
        parent = node.next_functions[0][0] if node.next_functions else None
        if divisor is not None and abs(divisor - world) < 1e-6 and parent is not None and id(parent) in self.losses:
            made = made_where(node)  # the division's own line (anomaly mode records it during the watch)
            self.pending = (made if made[0] is not None else user_frame(3), divisor)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        pending, self.pending = self.pending, None
        self.losses = set()
        if pending is None or probe.backwards_since_step != 1:
            return  # with k backwards per step a division by k is gradient accumulation done right
        where, divisor = pending
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the loss was divided by the world size ({divisor:g}) before backward, but "
            "DistributedDataParallel already averages the gradients over the ranks: every update is "
            f"{divisor:g} times too small",
            evidence={"divisor": divisor, "world_size": _ddp_world(probe)},
            fix="backpropagate the loss itself under DDP (it averages); divide only when you all-reduce "
            "gradients by hand with a SUM",
            where=where,
        )


def _ddp_world(probe: Probe) -> int | None:
    world = _world()
    if world is None:
        return None
    from torch.nn.parallel import DistributedDataParallel as ddp_type

    if not any(isinstance(m, ddp_type) for m in list(probe.roots.values())):
        return None  # gradients all-reduced by hand with SUM: dividing the loss is right
    return world[1]


def _divisor(node: Any) -> float | None:
    """``L / d`` or ``L * (1 / d)``: d, from the node's saved scalar operand."""
    name = type(node).__name__
    other = getattr(node, "_saved_other", None)
    if not isinstance(other, torch.Tensor) or other.numel() != 1:
        return None
    value = float(other)
    if name.startswith("DivBackward"):
        return value
    if name.startswith("MulBackward") and value != 0:
        return 1.0 / value
    return None
