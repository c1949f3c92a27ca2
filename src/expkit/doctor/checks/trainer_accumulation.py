"""A Hugging Face Trainer's ``compute_loss`` override that ignores ``num_items_in_batch`` under gradient
accumulation (issue 32). When the model's forward takes loss keyword arguments (``**kwargs``, as every causal LM
of transformers does), the Trainer counts the tokens of all k micro-batches, hands the count to ``compute_loss`` as
``num_items_in_batch`` and no longer divides the loss by k itself: the loss is expected to be normalised by that
count. An override that returns its own per-micro-batch mean makes each step's gradient the sum of k means, k times
too large (for SGD: a learning rate k times the one configured), from the first step, with nothing logged.
Measured by two replays of the override on the same micro-batch (no grad, the same random state), given the count
and twice the count: a loss that does not move ignores it."""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.trainer_columns import hf_trainer, hf_trainer_class

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent


def _loss_of(result: Any) -> float | None:
    loss = result[0] if isinstance(result, (tuple, list)) and result else result
    return float(loss.detach()) if isinstance(loss, torch.Tensor) and loss.numel() == 1 else None


def _last_return(function: Any) -> tuple[str | None, int | None]:
    """The file and the line of the last ``return`` of a function (the override), else of its ``def``."""
    code = getattr(function, "__code__", None)
    if code is None:
        return None, None
    try:
        lines, first = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return code.co_filename, code.co_firstlineno
    returns = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Return)]
    return code.co_filename, first + max(returns) - 1 if returns else code.co_firstlineno


@register
class TrainerAccumulationNotScaled(Check):
    """Under an HF Trainer with ``gradient_accumulation_steps`` > 1 that leaves the division to ``compute_loss``
    (the model takes loss kwargs, no ``compute_loss_func``): an overridden ``compute_loss`` whose loss does not
    change when ``num_items_in_batch`` doubles."""

    name = "trainer_accumulation_not_scaled"

    def __init__(self) -> None:
        self.done = False

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.done:
            return
        self.done = True
        trainer, base = hf_trainer(), hf_trainer_class()
        args = getattr(trainer, "args", None)
        steps = getattr(args, "gradient_accumulation_steps", 1)
        if trainer is None or base is None or not isinstance(steps, int) or steps < 2:
            return
        if type(trainer).compute_loss is base.compute_loss or getattr(trainer, "compute_loss_func", None) is not None:
            return  # the Trainer's own loss normalises by the count (or a compute_loss_func does)
        scaled = getattr(trainer, "loss_is_scaled_for_ga", None)
        if scaled is False or (scaled is None and not getattr(trainer, "model_accepts_loss_kwargs", False)):
            return  # the Trainer divides by the accumulation steps itself
        override = type(trainer).compute_loss
        check = self

        def make(original: Any) -> Any:
            judged = False

            def compute_loss(model: Any, inputs: Any, *a: Any, **kw: Any) -> Any:
                nonlocal judged
                count = kw.get("num_items_in_batch")
                if not judged and count is not None and isinstance(inputs, dict):
                    judged = True

                    def replay(n: Any) -> float | None:
                        return _loss_of(original(model, dict(inputs), *a, **{**kw, "num_items_in_batch": n}))

                    with contextlib.suppress(Exception):  # a replay's failure is not the program's
                        check._judge(probe, replay, count, steps, override)
                return original(model, inputs, *a, **kw)

            return compute_loss

        probe.patch(trainer, "compute_loss", make)

    def _judge(self, probe: Probe, replay: Any, count: Any, steps: int, override: Any) -> None:
        """``replay(n)``: the override's loss on the micro-batch with ``num_items_in_batch=n``."""
        values = []
        with probe.quiet():  # the replays' forwards are the doctor's, not the program's: no check sees them
            for n in (count, count * 2):
                with torch.no_grad(), torch.random.fork_rng(devices=[]):
                    values.append(replay(n))
        first, second = values
        if first is None or second is None or first == 0 or abs(second - first) > 1e-6 * abs(first):
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"compute_loss returns the same loss ({first:.4g}) for num_items_in_batch {int(count)} and "
            f"{int(count * 2)}: it ignores the count, and the Trainer, which leaves the normalisation to it when the "
            f"model takes loss kwargs, does not divide by gradient_accumulation_steps={steps} either: each step's "
            f"gradient is the sum of {steps} micro-batch means",
            evidence={"gradient_accumulation_steps": steps, "loss": first, "num_items_in_batch": int(count)},
            fix="return the loss summed over the items and divided by num_items_in_batch (loss.sum() / "
            "num_items_in_batch), or set trainer.model_accepts_loss_kwargs = False so the Trainer divides by k",
            where=_last_return(override),
        )
