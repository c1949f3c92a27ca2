"""How numbers that need care are written for people: p-values that a float cannot hold."""

from __future__ import annotations

__all__ = ["format_p"]

P_FLOOR = 1e-300
"""Below this a printed p-value is a bound: the float may have underflowed (it does below 5e-324)."""


def format_p(p: float) -> str:
    """A p-value in 3 significant digits, or ``< 1e-300`` where a float cannot hold it. Never ``0``.

    Example:
        >>> format_p(0.04999), format_p(2.8e-48), format_p(0.0)
        ('0.05', '2.8e-48', '< 1e-300')
    """
    if p < P_FLOOR:
        return "< 1e-300"
    return f"{p:.3g}"
