"""Budgets on chat-template rendering: a template is untrusted code, and Jinja's sandbox stops escapes, not loops.

Inside ``template_budget()`` every ``apply_chat_template`` (transformers compiles the template through
``chat_template_utils._compile_jinja_template``, patched for the block) renders under three budgets, each render
afresh: loop iterations over ``range`` (nested ``range(100000)`` loops), characters of output and of any string
or list a ``*``/``**`` builds (a giant-string template), and wall time (checked at every iteration and call, and
by SIGALRM in the main thread for loops that call nothing). Overrunning one raises ``TemplateBudgetExceeded``,
an ``InputError``: one line, exit 2, naming the budget.
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from expkit.errors import InputError

__all__ = ["RenderBudget", "TemplateBudgetExceeded", "TemplateRefused", "raised_in_template", "template_budget"]


@dataclass(frozen=True)
class RenderBudget:
    """Per render: ``seconds`` of wall time, ``iterations`` of ``range`` loops (all loops together),
    ``chars`` of output (and the largest string or list a ``*`` may build)."""

    seconds: float = 10.0
    iterations: int = 2_000_000
    chars: int = 16_000_000


class TemplateBudgetExceeded(InputError):
    """A chat template ran past a render budget (time, loop iterations or output size)."""


_HINT = "the chat template loops or grows without bound; fix the template (ChatML is a known-good one)"


class TemplateRefused(InputError):
    """A chat template refused a conversation: its own ``raise_exception`` (roles must alternate ...) or an error
    raised by its code (``raised_in_template``)."""


def raised_in_template(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by a chat template's own code (jinja2 runs it in frames named ``<template>``):
    DeepSeek-V3.1 concatenating a tool call's ``arguments`` object to a string raises TypeError there. Such an error
    is about the user's template and data, not expkit's code."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            return True
        tb = tb.tb_next
    return False


class _Meter:
    """The budget of one render: counts and a deadline, checked by the patched environment."""

    def __init__(self, budget: RenderBudget) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget.seconds
        self.iterations = 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateBudgetExceeded(
                f"the chat template did not finish rendering within {self.budget.seconds:g} s", hint=_HINT
            )

    def iterate(self, it: Any) -> Iterator[Any]:
        for x in it:
            self.iterations += 1
            if self.iterations > self.budget.iterations:
                raise TemplateBudgetExceeded(
                    f"the chat template ran more than {self.budget.iterations:,} loop iterations in one render",
                    hint=_HINT,
                )
            if not self.iterations % 1024:
                self.tick()
            yield x

    def sized(self, value: Any) -> Any:
        if isinstance(value, str | bytes | list | tuple) and len(value) > self.budget.chars:
            self.too_long(len(value))
        return value

    def too_long(self, n: int) -> None:
        raise TemplateBudgetExceeded(
            f"the chat template renders more than {self.budget.chars:,} characters (at least {n:,})", hint=_HINT
        )


_local = threading.local()
_lock = threading.Lock()
_depth = 0
_original: Any = None


def _meter() -> _Meter:
    m = getattr(_local, "meter", None)
    return m if m is not None else _Meter(_local_budget())


def _local_budget() -> RenderBudget:
    return getattr(_local, "budget", None) or RenderBudget()


class _BudgetedTemplate:
    """A compiled template whose ``render``/``generate`` run under a fresh meter (and SIGALRM in the main thread)."""

    def __init__(self, template: Any) -> None:
        self._template = template
        self.environment = template.environment

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        meter = _Meter(_local_budget())
        with _alarm(meter):
            previous, _local.meter = getattr(_local, "meter", None), meter
            try:
                out = 0
                for block in self._template.generate(*args, **kwargs):
                    out += len(block)
                    if out > meter.budget.chars:
                        meter.too_long(out)
                    yield block
            finally:
                _local.meter = previous

    def render(self, *args: Any, **kwargs: Any) -> str:
        return "".join(self.generate(*args, **kwargs))


@contextmanager
def _alarm(meter: _Meter) -> Iterator[None]:
    """SIGALRM at the deadline (main thread only): stops a loop over a long string that calls nothing."""
    if threading.current_thread() is not threading.main_thread() or signal.getitimer(signal.ITIMER_REAL)[0]:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        meter.deadline = 0.0
        meter.tick()

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, meter.budget.seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _compile(chat_template: str) -> _BudgetedTemplate:
    """transformers' own compile (its sandbox, filters and generation tracker) with budgeted range, calls and
    ``*``/``**`` on a fresh environment."""
    from transformers.utils import chat_template_utils as ctu

    env = ctu._cached_compile_jinja_template("").environment  # a fresh environment: transformers builds one per call
    plain_range = env.globals["range"]
    env.globals["range"] = lambda *a: _meter().iterate(plain_range(*a))
    env.intercepted_binops = frozenset({"*", "**"})
    plain_call = env.call

    def call(context: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:
        m = _meter()
        m.tick()
        return m.sized(plain_call(context, obj, *args, **kwargs))

    def call_binop(context: Any, operator: str, left: Any, right: Any) -> Any:
        m = _meter()
        if operator == "**" and isinstance(right, int) and abs(right) > 4096 and abs(left) > 1:
            raise TemplateBudgetExceeded(f"the chat template computes {left} ** {right}", hint=_HINT)
        if operator == "*":
            seq, times = (left, right) if isinstance(right, int) else (right, left)
            if isinstance(seq, str | list | tuple) and isinstance(times, int) and len(seq) * times > m.budget.chars:
                m.too_long(len(seq) * times)
        return env.binop_table[operator](left, right)

    for name, f in list(env.filters.items()):
        env.filters[name] = _sized_filter(f)
    env.call = call
    env.call_binop = call_binop
    return _BudgetedTemplate(env.from_string(chat_template))


def _sized_filter(f: Any) -> Any:
    """A filter refusing an integer argument above the output budget (``center(10**9)``) before it allocates."""

    @functools.wraps(f)
    def sized(*args: Any, **kwargs: Any) -> Any:
        m = _meter()
        for a in (*args, *kwargs.values()):
            if isinstance(a, int) and not isinstance(a, bool) and a > m.budget.chars:
                m.too_long(a)
        return m.sized(f(*args, **kwargs))

    return sized


# compiled once per template text for the process (each block reuses them; the budgets are per render, not here)
_compiled = functools.lru_cache(maxsize=64)(_compile)


@contextmanager
def template_budget(budget: RenderBudget | None = None) -> Iterator[None]:
    """Render chat templates under ``budget`` (default ``RenderBudget()``) until the block ends; nests.

    Example:
        >>> with template_budget():
        ...     tokenizer.apply_chat_template(messages, tokenize=False)  # TemplateBudgetExceeded on a runaway
    """
    global _depth, _original
    from transformers.utils import chat_template_utils as ctu

    previous = getattr(_local, "budget", None)
    _local.budget = budget or previous or RenderBudget()
    with _lock:
        if _depth == 0:
            _original = ctu._compile_jinja_template
            ctu._compile_jinja_template = _compiled
        _depth += 1
    try:
        yield
    finally:
        _local.budget = previous
        with _lock:
            _depth -= 1
            if _depth == 0:
                ctu._compile_jinja_template = _original
