"""Flags shared by several commands, and flag names in library errors: the library names a bad value by its
field (``watch_steps 0 ...``); the user typed a flag (``--steps``)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import typer

from expkit.errors import UsageError

__all__ = ["check_level", "fields_as_flags", "level_option"]


def check_level(value: float) -> float:
    """``--level``'s callback: a confidence level strictly between 0 and 1, or a usage error (exit 2, one
    line). NaN, inf, 0, 1 and negatives reached the quantile functions (issue 36: ``compare --level nan``
    was a traceback, exit 3)."""
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise typer.BadParameter(f"level={value} is not a confidence level in (0, 1); e.g. 0.95 for 95%")
    return value


def level_option(default: float = 0.95, help: str = "Confidence level in (0, 1).") -> Any:
    """The ``--level`` option of every command that draws intervals, checked by :func:`check_level`."""
    return typer.Option(default, "--level", callback=check_level, help=help)


@contextmanager
def fields_as_flags(flags: Mapping[str, str]) -> Iterator[None]:
    """A UsageError whose message starts with one of ``flags``' field names names the flag instead.

    Example:
        >>> with fields_as_flags({"watch_steps": "--steps"}):  # doctest: +SKIP
        ...     run_doctor(request)
    """
    try:
        yield
    except UsageError as exc:
        field = re.match(r"(\w+)[ =:]", exc.message)
        if field is None or field.group(1) not in flags:
            raise
        raise UsageError(flags[field.group(1)] + exc.message[len(field.group(1)) :], hint=exc.hint) from None
