"""Every pair of N models at once on the items both scored: items in common, the mean paired difference,
the exact McNemar p for 0/1 scores or the paired t test's for graded ones, and the items a paired test
needs to separate the two at 80 % power. Matrix products over the models x items scores, no pair loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = ["TARGET_POWER", "PairTests", "pair_tests"]

TARGET_POWER = 0.8
"""The power at which each pair's items_for_power is computed (the issue's 80 %)."""


def _z(level: float) -> float:
    from expkit.stats.intervals import z_two_sided

    return z_two_sided(level)  # finite for a level just below 1, where 0.5 + level / 2 rounds to 1.0


@dataclass(frozen=True, eq=False)
class PairTests:
    """(M, M) arrays over every pair (i, j): items both scored, mean paired difference i - j, the p-value,
    whether the exact McNemar test gave it (else the paired t test), items needed at 80 % power (0: none)."""

    n_common: np.ndarray
    delta: np.ndarray
    p: np.ndarray
    mcnemar: np.ndarray
    items_for_power: np.ndarray


def pair_tests(scores: np.ndarray, *, alpha: float = 0.05) -> PairTests:
    """Every pair of the (M, n) ``scores`` (NaN: not scored) on the items both scored, by matrix products.

    Pairs of 0/1 models: the exact McNemar p, 2 * Binom(b + c, 1/2).cdf(min(b, c)) capped at 1, b and c
    the discordant counts (McNemar 1947; ``scipy.stats.binomtest(b, b + c).pvalue``). Otherwise the paired
    t test of the mean difference (``scipy.stats.ttest_rel``). items_for_power: ((z_{1-alpha/2} + z_0.8)
    sd_d / |delta|)^2 rounded up, sd_d the per-item sd of the differences (Chow, Shao & Wang, sec. 3.1).
    """
    from scipy import stats

    v = (~np.isnan(scores)).astype(np.float64)  # (M, n) scored
    x = np.nan_to_num(scores, nan=0.0)
    n_common = v @ v.T
    sum_x = x @ v.T  # [i, j]: sum of i's scores on the items j scored too
    sum_d = sum_x - sum_x.T
    sum_d2 = (x * x) @ v.T + v @ (x * x).T - 2.0 * (x @ x.T)
    binary = np.all((x == 0.0) | (x == 1.0), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = sum_d / n_common
        var = np.maximum(sum_d2 - n_common * delta**2, 0.0) / (n_common - 1.0)
        sd = np.sqrt(var)
        a_only = np.rint(x @ (v - x).T)  # 0/1: i right, j wrong
        lo = np.minimum(a_only, a_only.T)
        p_exact = np.minimum(1.0, 2.0 * stats.binom.cdf(lo, a_only + a_only.T, 0.5))
        tstat = delta / (sd / np.sqrt(n_common))
        p_t = np.where(sd > 0.0, 2.0 * stats.t.sf(np.abs(tstat), n_common - 1.0), np.where(delta == 0.0, 1.0, 0.0))
        z_sum = _z(1.0 - alpha) + NormalDist().inv_cdf(TARGET_POWER)
        need = np.where(delta != 0.0, np.maximum(1.0, np.ceil((z_sum * sd / np.abs(delta)) ** 2 - 1e-9)), 0.0)
    mcnemar = binary[:, None] & binary[None, :]
    p = np.where(n_common > 0, np.where(mcnemar, p_exact, p_t), 1.0)
    need = np.nan_to_num(need, nan=0.0)
    return PairTests(n_common.astype(np.int64), delta, p, mcnemar, need.astype(np.int64))
