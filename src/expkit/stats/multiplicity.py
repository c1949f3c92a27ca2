"""Many comparisons at once: Holm's step-down adjustment of p-values (Holm 1979, Scand J Stat 6:65) and
Benjamini-Hochberg's false discovery rate."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from expkit.errors import UsageError

__all__ = ["bh_adjust", "holm_adjust"]


def _probabilities(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """The p-values as a flat float array, each checked to lie in [0, 1] (a NaN does not)."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise UsageError(f"p_values has shape {p.shape}; pass a flat list")
    bad = np.flatnonzero(~((p >= 0.0) & (p <= 1.0)))
    if bad.size:
        raise UsageError(f"p_values[{bad[0]}] = {p[bad[0]]} is not a probability in [0, 1]")
    return p


def holm_adjust(p_values: Sequence[float] | np.ndarray) -> tuple[float, ...]:
    """Holm-adjusted p-values, in the input order: sort ascending, multiply the i-th smallest
    (0-based) by m - i, take the running maximum, cap at 1. Reject where adjusted p <= alpha; this
    controls the family-wise error at alpha, uniformly more powerful than Bonferroni.

    Same as ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]``.

    Raises:
        UsageError: a p-value outside [0, 1] or NaN, naming its position.

    Example:
        >>> [round(p, 12) for p in holm_adjust([0.01, 0.04, 0.03])]
        [0.03, 0.06, 0.06]
    """
    p = _probabilities(p_values)
    m = p.size
    if m == 0:
        return ()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * (m - np.arange(m))
    adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    out = np.empty(m)
    out[order] = adjusted_sorted
    # no rounding: a raw p of 4.7e-18 stays 9.4e-18 at m = 2 (statsmodels' value), never 0; adjusted >= raw
    return tuple(float(v) for v in out)


def bh_adjust(p_values: Sequence[float] | np.ndarray) -> tuple[float, ...]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate; Benjamini & Hochberg 1995, JRSS B
    57:289), in the input order: the i-th smallest (1-based) times m / i, the running minimum from the
    largest down, capped at 1. Same as ``multipletests(p, method="fdr_bh")[1]``.

    Raises:
        UsageError: a p-value outside [0, 1] or NaN, naming its position.

    Example:
        >>> [round(p, 12) for p in bh_adjust([0.01, 0.04, 0.03])]
        [0.03, 0.04, 0.04]
    """
    p = _probabilities(p_values)
    m = p.size
    if m == 0:
        return ()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted_sorted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    out = np.empty(m)
    out[order] = adjusted_sorted
    return tuple(float(v) for v in out)
