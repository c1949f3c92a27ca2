"""Checks no result can skip: a figure no model can have is a bug in expkit, never an answer.

``ImpossibleFigure`` is deliberately not an ``ExpkitError``: the CLI shows it as an internal error (exit 3)
with its traceback, so a broken count can never end in "fits" (exit 0) or "does not fit" (exit 1). The
result types call these checks in ``__post_init__``: no ledger, count or roofline with such a figure exists.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["ImpossibleFigure", "check_at_least", "check_non_negative"]


class ImpossibleFigure(RuntimeError):
    """A figure no model can have (a negative byte count, fewer parameters than the embedding)."""


def check_non_negative(what: str, figures: Iterable[tuple[str, float]]) -> None:
    """Raise ImpossibleFigure for a figure below zero or not a number (``what``: whose figures)."""
    for name, value in figures:
        if isinstance(value, float) and math.isnan(value):
            raise ImpossibleFigure(f"{what}: {name} is NaN")
        if value < 0:
            raise ImpossibleFigure(f"{what}: {name} = {value:,} is negative")


def check_at_least(what: str, name: str, value: float, floor_name: str, floor: float) -> None:
    """Raise ImpossibleFigure when ``value`` is below ``floor`` (a count below the embedding it contains)."""
    if value < floor:
        raise ImpossibleFigure(f"{what}: {name} = {value:,} is below {floor_name} = {floor:,}")
