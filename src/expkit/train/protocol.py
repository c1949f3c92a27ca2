"""C3.1: the loop's lines and the object each one touches, with the protocol calls traced while it runs.

The usage layer is five objects (Dataset, DataLoader, nn.Module, loss, Optimizer) plus autograd.
``trace_protocol_calls`` runs real ``train_step`` calls with hooks on each object and records, in order,
which protocol method fired (``Dataset.__getitem__``, ``Module.forward``, ``grad accumulated`` ...).
"""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import dataclass
from unittest import mock

import torch

from expkit.train.config import TrainConfig
from expkit.train.corpus import Corpus
from expkit.train.data import CharWindows
from expkit.train.loop import setup_training, train_step
from expkit.train.model import CharLMConfig
from expkit.train.schedule import WarmupCosine

__all__ = ["LoopLine", "ProtocolTrace", "annotated_loop_lines", "trace_protocol_calls"]

# which object a line of train_step touches, by the words in the line (checked by a test)
_OBJECT_OF = (
    ("schedule.lr_at", "schedule"),
    ('group["lr"]', "Optimizer"),
    ("range(cfg.grad_accum)", "autograd (accumulation)"),
    (".to(setup.device)", "tensors -> device"),
    ("no_sync", "DDP wrapper"),
    ("next(setup.batches)", "DataLoader + Dataset"),
    ("model(x)", "nn.Module (+ autograd records)"),
    ("cross_entropy", "loss"),
    (".backward()", "autograd"),
    ("clip_grad_norm_", "gradients (.grad)"),
    ("opt.step()", "Optimizer"),
    ("zero_grad", "Optimizer (.grad)"),
)


@dataclass(frozen=True)
class LoopLine:
    """A commented line of ``train_step``: its code, its comment (the concept) and the object it touches."""

    lineno: int
    code: str
    concept: str
    touches: str


@dataclass(frozen=True)
class ProtocolTrace:
    """Protocol calls observed over ``steps`` optimizer steps: the ordered events of the first step
    and the count of each call overall."""

    steps: int
    first_step: tuple[str, ...]
    counts: dict[str, int]


def annotated_loop_lines() -> tuple[LoopLine, ...]:
    """The lines of ``train_step`` that carry a concept comment, with the object each touches."""
    lines, start = inspect.getsourcelines(train_step)
    out = []
    for i, raw in enumerate(lines):
        code, sep, comment = raw.partition("  # ")
        if not sep or not code.strip() or code.strip().startswith(('"', "'")):
            continue
        touches = next((obj for word, obj in _OBJECT_OF if word in code), "-")
        out.append(LoopLine(start + i, code.strip(), comment.strip(), touches))
    return tuple(out)


def trace_protocol_calls(
    *, corpus: Corpus, model_config: CharLMConfig, train_config: TrainConfig, steps: int = 2, seed: int = 0
) -> ProtocolTrace:
    """Run ``steps`` real ``train_step`` calls with a hook on each object and record what fired."""
    events: list[str] = []
    schedule = WarmupCosine(
        lr_max=train_config.lr_max, lr_min=train_config.lr_min, warmup_steps=1, max_steps=max(2, steps)
    )
    setup = setup_training(
        model_config=model_config, train_config=train_config, corpus=corpus, seed=seed, device="cpu", schedule=schedule
    )
    original_getitem = CharWindows.__getitem__

    def getitem(self, offset):  # Dataset protocol: map-style __getitem__
        events.append("Dataset.__getitem__")
        return original_getitem(self, offset)

    handles = [
        setup.module.register_forward_pre_hook(lambda m, a: events.append("Module.__call__ -> forward")),
        setup.module.register_forward_hook(
            lambda m, a, o: events.append("autograd recorded the graph") if o.grad_fn is not None else None
        ),
        setup.optimizer.register_step_pre_hook(lambda o, a, k: events.append("Optimizer.step")),
    ]
    for name, p in setup.module.named_parameters():
        handles.append(
            p.register_post_accumulate_grad_hook(lambda p, name=name: events.append("autograd accumulated .grad"))
        )
    real_zero = setup.optimizer.zero_grad

    def zero_grad(set_to_none: bool = True) -> None:
        events.append(f"Optimizer.zero_grad(set_to_none={set_to_none})")
        real_zero(set_to_none=set_to_none)

    real_ce = torch.nn.functional.cross_entropy

    def cross_entropy(*a, **k):
        events.append(f"loss: cross_entropy(ignore_index={k.get('ignore_index', -100)})")
        return real_ce(*a, **k)

    marks = []
    try:
        # patched for these steps only, restored on exit: the loop calls opt.zero_grad(...) (an instance
        # attribute here), the Dataset's __getitem__ and F.cross_entropy
        with (
            mock.patch.object(setup.optimizer, "zero_grad", zero_grad),
            mock.patch.object(CharWindows, "__getitem__", getitem),
            mock.patch.object(torch.nn.functional, "cross_entropy", cross_entropy),
        ):
            for s in range(steps):
                marks.append(len(events))
                train_step(setup, s)
    finally:
        for h in handles:
            h.remove()
    first_end = marks[1] if len(marks) > 1 else len(events)
    first = _collapse(events[:first_end])
    return ProtocolTrace(steps=steps, first_step=tuple(first), counts=dict(Counter(events)))


def _collapse(events: list[str]) -> list[str]:
    """Runs of the same event as ``event x n``."""
    out: list[str] = []
    n = 0
    for i, e in enumerate(events):
        n += 1
        if i + 1 == len(events) or events[i + 1] != e:
            out.append(f"{e} x {n}" if n > 1 else e)
            n = 0
    return out
