"""Sanity checks no trainer runs by default: step-0 loss vs ln V, parameters without gradient, a
forgotten ``zero_grad``, the first module whose output went non-finite.

Each check returns a frozen dataclass (what was measured, a verdict, the likely cause); the loop calls
them once or only when something is already wrong, so they cost almost nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

__all__ = [
    "FirstLossCheck",
    "GradCheck",
    "NonFiniteCheck",
    "check_first_loss",
    "find_params_without_grad",
    "find_stale_grads",
    "locate_first_nonfinite",
]

CheckVerdict = Literal["ok", "warn", "fail"]

# step-0 loss bands around ln V. With normal(0, 0.02) init the logits have a small spread and the
# loss is ln V + var/2 (a few hundredths); the seed measured 5.07 at ln 128 = 4.85 (+0.22).
FIRST_LOSS_OK_BELOW = 0.25  # nats under ln V: already-low loss means the model can see its target
FIRST_LOSS_OK_ABOVE = 0.75  # nats over ln V: confident wrong logits at step 0 mean an init problem


@dataclass(frozen=True)
class FirstLossCheck:
    """The loss of the first batch before any update, against ln V (uniform prediction)."""

    first_loss: float
    ln_vocab: float
    vocab_size: int
    delta: float
    verdict: CheckVerdict
    likely_cause: str | None


@dataclass(frozen=True)
class GradCheck:
    """Parameter names a gradient check flagged (empty when all is well)."""

    name: str
    verdict: CheckVerdict
    parameters: tuple[str, ...]
    detail: str


@dataclass(frozen=True)
class NonFiniteCheck:
    """The first module (in forward order) whose output held NaN or inf, or None when none did."""

    module: str | None
    kind: str | None
    detail: str


def check_first_loss(first_loss: float, *, vocab_size: int) -> FirstLossCheck:
    """Compare the step-0 loss with ln V and name the likely cause when it is far off.

    Args:
        first_loss: mean cross-entropy (nats) of the first batch, before any optimizer step.
        vocab_size: V, the number of classes the head predicts.

    Returns:
        FirstLossCheck; verdict ``ok`` within [ln V - 0.25, ln V + 0.75], else ``fail``.

    Example:
        >>> check_first_loss(5.07, vocab_size=128).verdict   # the seed's figure, ln 128 = 4.85
        'ok'
    """
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
    ln_v = math.log(vocab_size)
    delta = first_loss - ln_v
    cause = None
    if not math.isfinite(first_loss):
        verdict: CheckVerdict = "fail"
        cause = "the loss is not finite at step 0: look at the NaN guard's module, the data, or the init"
    elif delta < -FIRST_LOSS_OK_BELOW:
        verdict = "fail"
        k = math.exp(first_loss)
        cause = (
            f"loss below ln V by {-delta:.2f} before training: the targets are probably not shifted "
            "(labels == inputs, the model copies), or the head predicts fewer classes than V "
            f"(the loss equals ln {k:.0f})"
        )
    elif delta > FIRST_LOSS_OK_ABOVE:
        verdict = "fail"
        cause = (
            f"loss above ln V by {delta:.2f}: the step-0 logits are large and confidently wrong; "
            "initialise the head/embedding with a small std (0.02) or check the vocabulary size"
        )
    else:
        verdict = "ok"
    return FirstLossCheck(
        first_loss=float(first_loss),
        ln_vocab=ln_v,
        vocab_size=vocab_size,
        delta=delta,
        verdict=verdict,
        likely_cause=cause,
    )


def find_params_without_grad(model: nn.Module) -> GradCheck:
    """After the first backward: trainable parameters whose ``.grad`` is None (not in the graph).

    A frozen branch, an unused head or a module built but never called shows up here.
    """
    missing = tuple(n for n, p in model.named_parameters() if p.requires_grad and p.grad is None)
    if missing:
        return GradCheck(
            "params_without_grad",
            "fail",
            missing,
            f"{len(missing)} trainable parameters got no gradient from the first backward",
        )
    return GradCheck("params_without_grad", "ok", (), "every trainable parameter received a gradient")


def find_stale_grads(model: nn.Module) -> GradCheck:
    """Before the first backward of an optimizer step, without gradient accumulation: parameters that
    still hold a non-zero gradient. They mean ``zero_grad`` was not called and the next backward adds
    onto the previous step's gradient (C3.2: the gradient norm grows step after step).
    """
    stale = tuple(n for n, p in model.named_parameters() if p.grad is not None and bool(torch.any(p.grad != 0)))
    if stale:
        return GradCheck(
            "stale_grads",
            "fail",
            stale,
            f"{len(stale)} parameters carry gradient from the previous step: zero_grad is missing",
        )
    return GradCheck("stale_grads", "ok", (), "gradients were cleared between steps")


def locate_first_nonfinite(model: nn.Module, *inputs: torch.Tensor) -> NonFiniteCheck:
    """Re-run a forward with hooks on every module and name the first whose output is NaN or inf.

    The loop calls this only after a non-finite loss, so the hooks cost nothing on healthy steps.
    Modules finish in post-order (children before parents); the first hook to fire with a bad
    output is the innermost, earliest culprit.
    """
    found: list[tuple[str, str]] = []

    def make_hook(name: str):
        def hook(_module: nn.Module, _inp: object, out: object) -> None:
            if found:
                return
            tensors = out if isinstance(out, (tuple, list)) else (out,)
            for t in tensors:
                if isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all()):
                    found.append((name, "nan" if bool(torch.isnan(t).any()) else "inf"))
                    return

        return hook

    handles = [m.register_forward_hook(make_hook(n or type(m).__name__)) for n, m in model.named_modules()]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    if found:
        name, kind = found[0]
        return NonFiniteCheck(name, kind, f"module {name!r} produced the first {kind} of the forward")
    return NonFiniteCheck(
        None,
        None,
        "no module produced a non-finite output on this batch; "
        "the loss itself (or the data) is the first non-finite value",
    )
