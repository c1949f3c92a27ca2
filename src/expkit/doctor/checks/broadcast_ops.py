"""A loss written by hand whose arithmetic broadcasts two tensors of the batch against each other (issue 32):
``pred - target`` with ``pred`` (N, 1) and ``target`` (N,) is (N, N), every prediction compared with every
target; a dense target without its channel axis, (N, H, W) against (N, 1, H, W), gives (N, N, H, W). The loss
functions of ``torch.nn.functional`` are judged by ``loss_broadcast``; this check watches the user's own
arithmetic between the training forward and its backward, op by op, during the watched steps only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import FirstUserOp, close_mode, op_caller

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, ForwardEvent, Probe, StepEvent

# elementwise binary arithmetic, as torch functions and as Tensor operators
BINARY = {
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow", "maximum", "minimum",
    "__add__", "__radd__", "__sub__", "__rsub__", "rsub", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__pow__", "__rpow__", "sub_", "add_", "mul_", "div_",
}  # fmt: skip


def crossed(a: tuple[int, ...], b: tuple[int, ...], batch: int) -> bool:
    """Whether broadcasting ``a`` against ``b`` (tensors of different rank) spreads each along an axis the other
    holds ``batch`` values on: ``(N, 1)`` with ``(N,)``, ``(N, 1, H, W)`` with ``(N, H, W)``. Written pairwise
    code (``x[:, None] - x[None, :]``) gives both the same rank and is not judged."""
    if len(a) == len(b) or batch < 2:
        return False
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    a_spread = any(x == 1 and y == batch for x, y in zip(pa, pb, strict=True))  # a repeated along b's batch axis
    b_spread = any(y == 1 and x == batch for x, y in zip(pa, pb, strict=True))
    return a_spread and b_spread


class _Arithmetic(FirstUserOp):
    """Between a training forward and its backward: the first user op whose two tensor operands cross-broadcast
    over the batch; its record is the shapes (a, b, out). A crossing of two tensors without grad (an advantage
    ``returns - values.detach()``) counts once its output feeds an op whose result carries grad (the loss), and
    is named at its own line."""

    def __init__(self, batch: int) -> None:
        super().__init__()
        self.batch = batch
        # id(out) -> (out, its line, shapes): the tensor is held while the mode is open, so its id stays its own
        self.pending: dict[int, tuple[torch.Tensor, tuple[str, int], tuple[tuple[int, ...], ...]]] = {}

    def match(self, func: Any, args: tuple[Any, ...], out: Any) -> tuple[tuple[int, ...], ...] | None:
        if self.pending and isinstance(out, torch.Tensor) and out.requires_grad:
            fed = [self.pending[id(a)] for a in args if isinstance(a, torch.Tensor) and id(a) in self.pending]
            if fed:
                self.found = fed[0][1:]  # the crossing's own line, not the op that carried it into the loss
                return None
        if getattr(func, "__name__", "") not in BINARY or len(args) < 2:
            return None
        a, b = args[0], args[1]
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and isinstance(out, torch.Tensor)):
            return None
        if not crossed(tuple(a.shape), tuple(b.shape), self.batch):
            return None
        shapes = (tuple(a.shape), tuple(b.shape), tuple(out.shape))
        if a.requires_grad or b.requires_grad:
            return shapes
        file, line = op_caller(self.yours, 3)
        if file is not None and line is not None and len(self.pending) < 64:
            self.pending[id(out)] = (out, (file, line), shapes)
        return None


@register
class ArithmeticBroadcastAcrossBatch(Check):
    """Hand-written loss arithmetic between the training forward and its backward whose two operands, of
    different rank, broadcast against each other over the batch axis ((N, 1) - (N,) -> (N, N))."""

    name = "loss_arithmetic_broadcast"

    def __init__(self) -> None:
        self.mode: _Arithmetic | None = None
        self.reported = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = ev.first_tensor()
        if self.mode is not None or self.reported or not (ev.training and ev.grad_enabled) or x is None:
            return
        if x.dim() < 1 or x.shape[0] < 2:
            return
        self.mode = _Arithmetic(int(x.shape[0]))
        self.mode.__enter__()

    def _close(self, probe: Probe) -> None:
        mode, self.mode = self.mode, None
        if mode is None:
            return
        close_mode(mode)
        if mode.found is None or self.reported:
            return
        self.reported = True
        where, (a, b, out) = mode.found
        probe.report(
            kind="bug",
            check=self.name,
            message=f"an operation of the loss broadcasts {list(a)} against {list(b)} to {list(out)}: each of the "
            f"batch's {mode.batch} rows meets every other row (a prediction (N, 1) against a target (N,), or a "
            "target missing its channel axis), so the loss compares every prediction with every target",
            evidence={"left_shape": list(a), "right_shape": list(b), "result_shape": list(out), "batch": mode.batch},
            fix="give both operands the same shape first (target.view_as(pred), pred.squeeze(-1), or "
            "target.unsqueeze(1) for a dense target)",
            where=where,
        )

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        self._close(probe)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        self._close(probe)

    def finish(self, probe: Probe) -> None:
        self._close(probe)
