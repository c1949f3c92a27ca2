"""Dropout that stays on in ``eval()`` (issue 32): ``F.dropout(x, p)`` without ``training=self.training`` uses
its default ``training=True``, so ``model.eval()`` does not switch it off and every validation and inference pass
is random (pytorch-fm#21). Measured, not read from the code: the first training forward of each model is replayed
once with every layer's ``training`` flag off (no grad, the program's random stream and buffers left as they were),
and a dropout op that still runs with ``training=True`` and ``p > 0`` is reported at the user's line that called
it. A call that writes ``training=`` itself (Monte Carlo dropout kept on on purpose) is left alone. A dropout
written by hand (drop path, stochastic depth: a Bernoulli mask drawn with ``bernoulli``) that the replay still
draws in eval mode is found too, named at the first statement of the function that draws it (where a
``self.training`` guard goes), the draw's line in the message."""

from __future__ import annotations

import ast
import functools
import linecache
from typing import TYPE_CHECKING, Any

import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import _Replay, close_mode, op_caller

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe

DROPOUTS = (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout)
MASK_DRAWS = ("bernoulli", "bernoulli_")  # a hand-written dropout's mask


@functools.lru_cache(maxsize=64)
def _function_starts(file: str) -> tuple[tuple[int, int, int], ...]:
    """Each function of ``file`` as (first line, last line, line of its first statement after a docstring)."""
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return ()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            body = node.body
            if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            out.append((node.lineno, node.end_lineno or node.lineno, body[0].lineno))
    return tuple(out)


def _guard_line(file: str, line: int) -> int:
    """The first statement of the innermost function around ``line`` (where a ``self.training`` guard goes)."""
    around = [f for f in _function_starts(file) if f[0] <= line <= f[1]]
    return min(around, key=lambda f: f[1] - f[0])[2] if around else line


class _ActiveDropout(TorchFunctionMode):
    """During the eval replay: the first dropout op called by the user's own code with ``training=True``."""

    def __init__(self) -> None:
        super().__init__()
        self.on = True
        self.yours: dict[str, bool] = {}
        self.found: tuple[tuple[str, int], float] | None = None
        self.drawn: tuple[tuple[str, int], int, float | None] | None = None  # (guard line, draw line, keep prob)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.on and self.found is None and func in DROPOUTS:
            p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
            training = kwargs.get("training", args[2] if len(args) > 2 else True)
            file, line = op_caller(self.yours, 2)
            if (
                training
                and isinstance(p, float | int)
                and p > 0
                and file is not None
                and line is not None
                and "training" not in linecache.getline(file, line)  # written out: kept on on purpose
            ):
                self.found = ((file, line), float(p))
        elif self.on and self.drawn is None and getattr(func, "__name__", "") in MASK_DRAWS:
            file, line = op_caller(self.yours, 2)
            if file is not None and line is not None:
                keep = kwargs.get("p", args[1] if len(args) > 1 else None)
                keep = float(keep) if isinstance(keep, float | int) else None
                self.drawn = ((file, _guard_line(file, line)), line, keep)
        return out


@register
class DropoutActiveInEval(Check):
    """A dropout op that runs with ``training=True`` while every layer of the model is in eval mode (a functional
    ``F.dropout(x, p)`` left at its default): validation and inference stay random."""

    name = "dropout_active_in_eval"

    def __init__(self) -> None:
        self.tested: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not ev.first_training(self.tested):
            return
        modules = list(ev.module.modules())
        flags = [m.training for m in modules]
        mode = _ActiveDropout()
        try:
            for m in modules:  # the flag itself, not eval(): the probe records eval() calls as the program's
                m.training = False
            with mode:
                _Replay(ev.module, ev.kwargs)(ev.inputs)
        finally:
            for m, flag in zip(modules, flags, strict=True):
                m.training = flag
            close_mode(mode)
        if mode.found is None and mode.drawn is not None:
            where, line, keep = mode.drawn
            probe.report(
                kind="bug",
                check=self.name,
                message=f"a Bernoulli mask (line {line}) is still drawn while every layer of "
                f"{type(ev.module).__name__} is in eval(): a dropout written by hand (drop path, stochastic depth) "
                "without a self.training guard, so every validation and inference pass is random",
                evidence={"draw_line": line, "keep_probability": keep},
                fix="return the input unchanged when not self.training (as nn.Dropout and timm's DropPath do)",
                where=where,
            )
            return
        if mode.found is None:
            return
        where, p = mode.found
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a dropout (p={p:g}) still runs with training=True while every layer of {type(ev.module).__name__}"
            " is in eval(): a functional dropout left at its default training=True is not switched off by "
            "model.eval(), so every validation and inference pass is random",
            evidence={"p": p},
            fix="pass training=self.training to F.dropout (or use an nn.Dropout layer, which eval() switches off)",
            where=where,
        )
