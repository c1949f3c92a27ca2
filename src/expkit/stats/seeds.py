"""Summaries over training seeds: the t-interval of the mean, the interquartile mean (IQM) with a
bootstrap interval, the seed noise floor, and the Welch interval for the difference of two configs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from expkit.errors import UsageError

__all__ = [
    "MeanInterval",
    "SeedSummary",
    "iqm",
    "iqm_interval",
    "summarize_seeds",
    "t_interval",
    "t_quantile",
    "welch_interval",
]


def _values(values: Sequence[float] | np.ndarray, name: str = "values", min_n: int = 2) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise UsageError(f"{name} has shape {arr.shape}; expected one number per seed")
    if arr.size < min_n:
        raise UsageError(f"{name} has {arr.size} seeds; need at least {min_n}", hint="run more seeds")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise UsageError(
            f"{name}[{bad[0]}] = {arr[bad[0]]} is not finite (a diverged seed?)",
            hint="report diverged seeds separately instead of averaging them",
        )
    return arr


def t_quantile(level: float, df: float) -> float:
    """The two-sided Student-t critical value, ``t.isf((1 - level) / 2, df)`` (finite for a level just below 1,
    where ``t.ppf(0.5 + level / 2)`` read 1.0 and gave inf); a level outside (0, 1), NaN included, is refused."""
    if not 0.0 < level < 1.0:
        raise UsageError(f"level={level} is not in (0, 1)")
    from scipy.stats import t

    return float(t.isf((1.0 - level) / 2.0, df))


@dataclass(frozen=True)
class MeanInterval:
    """``estimate`` with a two-sided interval; ``df`` the degrees of freedom of the t quantile used."""

    estimate: float
    low: float
    high: float
    std_error: float
    df: float
    n: int
    level: float
    method: str

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0


def t_interval(values: Sequence[float] | np.ndarray, *, level: float = 0.95) -> MeanInterval:
    """Student-t interval of the mean over seeds: mean +- t_{n-1} * s / sqrt(n).

    Same as ``scipy.stats.t.interval(level, n - 1, loc=mean, scale=sem)``.

    Example:
        >>> iv = t_interval([2.0, 2.2, 1.9, 2.1, 2.0]); round(iv.low, 3), round(iv.high, 3)
        (1.898, 2.182)
    """
    x = _values(values)
    n = x.size
    se = float(x.std(ddof=1)) / math.sqrt(n)
    h = t_quantile(level, n - 1) * se
    m = float(x.mean())
    return MeanInterval(m, m - h, m + h, se, float(n - 1), n, level, "t")


def welch_interval(
    values_a: Sequence[float] | np.ndarray, values_b: Sequence[float] | np.ndarray, *, level: float = 0.95
) -> MeanInterval:
    """Welch interval for mean(a) - mean(b) with Welch-Satterthwaite degrees of freedom
    (Welch 1947, Biometrika 34:28); what ``scipy.stats.ttest_ind(a, b, equal_var=False)`` uses.
    """
    a, b = _values(values_a, "values_a"), _values(values_b, "values_b")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    d = float(a.mean() - b.mean())
    if se == 0.0:
        return MeanInterval(d, d, d, 0.0, math.inf, a.size + b.size, level, "welch")
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    h = t_quantile(level, df) * se
    return MeanInterval(d, d - h, d + h, se, float(df), a.size + b.size, level, "welch")


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% (``scipy.stats.trim_mean(x, 0.25)``), robust to
    one bad seed (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice")."""
    from scipy.stats import trim_mean

    return float(trim_mean(_values(values, min_n=1), 0.25))


def iqm_interval(
    values: Sequence[float] | np.ndarray, *, n_boot: int = 2_000, seed: int = 0, level: float = 0.95
) -> MeanInterval:
    """IQM with a percentile bootstrap interval over resampled seeds (seeded, vectorized)."""
    from scipy.stats import trim_mean

    x = _values(values)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))  # (n_boot, n_seeds)
    boots = trim_mean(x[idx], 0.25, axis=1)
    alpha = 1.0 - level
    low, high = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return MeanInterval(
        iqm(x), float(low), float(high), float(boots.std(ddof=1)), math.nan, x.size, level, "iqm-bootstrap"
    )


@dataclass(frozen=True)
class SeedSummary:
    """One configuration over seeds. ``noise_floor``: the smallest difference between two configs of
    this many seeds each (same spread) that a Welch t-test at ``level`` would resolve,
    ``t_{2(n-1)} * s * sqrt(2 / n)``; differences below it are seed noise."""

    n_seeds: int
    mean: MeanInterval
    iqm: MeanInterval
    std: float
    min: float
    max: float
    noise_floor: float


def summarize_seeds(values: Sequence[float] | np.ndarray, *, level: float = 0.95, seed: int = 0) -> SeedSummary:
    """Mean with t-interval, IQM with bootstrap interval, spread and noise floor of one config.

    Example:
        >>> s = summarize_seeds([2.0, 2.2, 1.9, 2.1, 2.0]); round(s.noise_floor, 3)
        0.166
    """
    x = _values(values)
    n = x.size
    sd = float(x.std(ddof=1))
    floor = t_quantile(level, 2 * (n - 1)) * sd * math.sqrt(2.0 / n)
    return SeedSummary(
        n,
        t_interval(x, level=level),
        iqm_interval(x, seed=seed, level=level),
        sd,
        float(x.min()),
        float(x.max()),
        floor,
    )
