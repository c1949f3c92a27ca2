"""Confidence intervals for a proportion (accuracy on n items): Wald, Wilson, Clopper-Pearson.

The seed's eval-table formula (claim C2.2) is the Wald interval ``p +- z*sqrt(p(1-p)/n)``. It is
kept because it is what people compute by hand, but it collapses to zero width at p = 0 or 1 and
under-covers for small n; Wilson is the default everywhere else in expkit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from expkit.errors import UsageError

Method = Literal["wald", "wilson", "exact"]
METHODS: tuple[str, ...] = ("wald", "wilson", "exact")

__all__ = [
    "METHODS",
    "DifferenceInterval",
    "ProportionInterval",
    "clopper_pearson_interval",
    "min_detectable_difference",
    "newcombe_interval",
    "proportion_interval",
    "short_int",
    "wald_interval",
    "wilson_interval",
    "z_two_sided",
]


@dataclass(frozen=True)
class ProportionInterval:
    """A two-sided confidence interval for a proportion ``k / n``.

    ``half_width`` is ``(high - low) / 2``; for Wald it equals ``z*sqrt(p(1-p)/n)``, for the
    asymmetric Wilson and exact intervals it is half the total width.
    """

    estimate: float
    low: float
    high: float
    half_width: float
    method: str
    n: int
    k: int
    level: float


MAX_COUNT = 10**15
"""Largest item count an interval is computed for (float64 holds every integer up to 9e15)."""


def short_int(n: int) -> str:
    """An integer for a one-line message: a 400-digit one as its first digits and its length."""
    text = str(n)
    return text if len(text) <= 20 else f"{text[:6]}...({len(text)} digits)"


def _validate(k: int, n: int, level: float) -> None:
    for name, value in (("correct", k), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{name}={value!r} is not an integer count", hint="pass a whole number")
    if n <= 0:
        raise UsageError(f"n={n} must be a positive number of items", hint="pass n >= 1")
    if n > MAX_COUNT:  # past float64's exact integers the interval is arithmetic on rounded counts (10**400: inf)
        raise UsageError(f"n={short_int(n)} is more items than any eval has (at most {MAX_COUNT:.0e})")
    if k < 0:
        raise UsageError(f"correct={k} is negative", hint="pass a count between 0 and n")
    if k > n:
        raise UsageError(f"correct={k} is larger than n={n}", hint="pass a count between 0 and n")
    if not (0.0 < level < 1.0) or math.isnan(level):
        raise UsageError(f"level={level} is not in (0, 1)", hint="pass e.g. 0.95 for a 95% interval")


def z_two_sided(level: float) -> float:
    """Two-sided normal quantile: 1.959964 for level 0.95, from the tail ``(1 - level) / 2`` so that a level
    just below 1 (``0.9999999999999999``, 8.29) stays finite: ``0.5 + level / 2`` rounded to 1.0 there and
    the quantile raised (issue 36: a traceback, exit 3).

    Example:
        >>> round(z_two_sided(0.95), 6), round(z_two_sided(0.9999999999999999), 2)
        (1.959964, 8.29)
    """
    return -NormalDist().inv_cdf((1.0 - level) / 2.0)


_z = z_two_sided


def _make(k: int, n: int, low: float, high: float, method: str, level: float) -> ProportionInterval:
    low, high = max(0.0, low), min(1.0, high)
    return ProportionInterval(
        estimate=k / n,
        low=low,
        high=high,
        half_width=(high - low) / 2.0,
        method=method,
        n=n,
        k=k,
        level=level,
    )


def wald_interval(k: int, n: int, *, level: float = 0.95) -> ProportionInterval:
    """The normal-approximation (Wald) interval ``p +- z*sqrt(p(1-p)/n)``, clipped to [0, 1].

    Args:
        k: number of correct items, 0 <= k <= n.
        n: number of items.
        level: confidence level in (0, 1).

    Raises:
        UsageError: a count outside [0, n], n <= 0 or a level outside (0, 1).

    Example:
        >>> round(wald_interval(40, 80).half_width, 4)   # seed C2.2: 1.96*sqrt(.25/80)
        0.1096
    """
    _validate(k, n, level)
    p = k / n
    h = _z(level) * math.sqrt(p * (1.0 - p) / n)
    return _make(k, n, p - h, p + h, "wald", level)


def wilson_interval(k: int, n: int, *, level: float = 0.95) -> ProportionInterval:
    """The Wilson score interval (Wilson 1927), what R's ``prop.test(k, n, correct=FALSE)`` gives.

    centre = (p + z^2/2n) / (1 + z^2/n); half = z/(1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2).

    Example:
        >>> iv = wilson_interval(40, 80); round(iv.low, 3), round(iv.high, 3)
        (0.393, 0.607)
    """
    _validate(k, n, level)
    p, z = k / n, _z(level)
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    # at k = 0 (k = n) the bound is exactly 0 (1); the closed form leaves a rounding residue
    low = 0.0 if k == 0 else centre - half
    high = 1.0 if k == n else centre + half
    return _make(k, n, low, high, "wilson", level)


def clopper_pearson_interval(k: int, n: int, *, level: float = 0.95) -> ProportionInterval:
    """The exact (Clopper-Pearson 1934) interval from beta quantiles; conservative by design.

    low = Beta(alpha/2; k, n-k+1), high = Beta(1-alpha/2; k+1, n-k), with low = 0 at k = 0 and
    high = 1 at k = n. Same as ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``.
    """
    _validate(k, n, level)
    from scipy.special import betaincinv  # lighter than scipy.stats; imported only when used

    alpha = 1.0 - level
    low = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, alpha / 2.0))
    # the upper quantile by the symmetry 1 - Beta(b, a): 1 - alpha / 2 rounds to 1.0 for a level just below 1
    high = 1.0 if k == n else 1.0 - float(betaincinv(n - k, k + 1, alpha / 2.0))
    return _make(k, n, low, high, "exact", level)


def proportion_interval(k: int, n: int, *, method: str = "wilson", level: float = 0.95) -> ProportionInterval:
    """Dispatch on ``method`` (``wald``, ``wilson`` or ``exact``)."""
    if method == "wald":
        return wald_interval(k, n, level=level)
    if method == "wilson":
        return wilson_interval(k, n, level=level)
    if method == "exact":
        return clopper_pearson_interval(k, n, level=level)
    raise UsageError(f"method={method!r} is not known", hint=f"use one of {', '.join(METHODS)}")


def min_detectable_difference(n: int, *, p: float = 0.5, level: float = 0.95) -> float:
    """Smallest accuracy difference two models, each scored on its own n items, must show before an
    unpaired two-proportion z-test at ``level`` calls it significant: ``z*sqrt(2p(1-p)/n)``.

    This is the Wald standard error of a difference of two independent proportions at a common p;
    paired designs (same items for both models) need less, see ``expkit.stats`` paired comparison.

    Example:
        >>> round(min_detectable_difference(80), 3)   # 15.5 points: a 5-point gap is invisible
        0.155
    """
    if n <= 0:
        raise UsageError(f"n={n} must be positive")
    if not 0.0 < p < 1.0:
        raise UsageError(f"p={p} must be in (0, 1)")
    return _z(level) * math.sqrt(2.0 * p * (1.0 - p) / n)


@dataclass(frozen=True)
class DifferenceInterval:
    """An interval for ``p1 - p2`` of two independent proportions."""

    estimate: float
    low: float
    high: float
    method: str
    level: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0


def newcombe_interval(k1: int, n1: int, k2: int, n2: int, *, level: float = 0.95) -> DifferenceInterval:
    """Newcombe's hybrid score interval for ``p1 - p2`` built from two Wilson intervals
    (Newcombe 1998, Stat Med 17:873, method 10). Well behaved near 0 and 1, unlike Wald.
    """
    a, b = wilson_interval(k1, n1, level=level), wilson_interval(k2, n2, level=level)
    d = a.estimate - b.estimate
    low = d - math.sqrt((a.estimate - a.low) ** 2 + (b.high - b.estimate) ** 2)
    high = d + math.sqrt((a.high - a.estimate) ** 2 + (b.estimate - b.low) ** 2)
    return DifferenceInterval(estimate=d, low=low, high=high, method="newcombe", level=level)
