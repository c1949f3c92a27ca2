"""Compare two models scored on the same items: McNemar for 0/1 scores, a seeded paired bootstrap for
any score, clustered standard errors when items come in clusters; partial item overlap pairs on the shared
items (the dropped counts said), an unpaired comparison only when asked.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Literal, TypeVar

import numpy as np

from expkit.errors import UsageError

__all__ = [
    "PAIRINGS",
    "BootstrapInterval",
    "McNemarResult",
    "PairedComparison",
    "Pairing",
    "compare_models",
    "compare_paired",
    "max_safe_score",
    "mcnemar_p_values",
    "mcnemar_test",
    "paired_bootstrap",
]

# McNemar's exact binomial test below this many discordant items, chi-squared with continuity
# correction above (the rule of statsmodels' docs and Fagerland et al. 2013, BMC Med Res Meth 13:91).
EXACT_MAX_DISCORDANT = 25
N_BOOT = 10_000
# When the scores take at most this many distinct values, the bootstrap draws multinomial counts of
# the values instead of item indices: the same distribution of the resampled mean, far fewer draws.
_MAX_DISTINCT_FOR_COUNTS = 64
_POWER_FOR_NEEDED_N = 0.8  # "need ~N items" is the n giving 80% power at the observed delta

VerdictWord = Literal["better", "worse", "inconclusive"]
K = TypeVar("K", bound=Hashable)  # an item id


def _z(level: float) -> float:
    from expkit.stats.intervals import z_two_sided

    return z_two_sided(level)  # finite for a level just below 1, where 0.5 + level / 2 rounds to 1.0


def max_safe_score(n: int) -> float:
    """Largest |score| whose sums, differences and squared deviations over ``n`` items stay finite in
    float64: (2 x)^2 n <= 1.8e308, i.e. x <= sqrt(1.8e308 / (4 n)) (about 6.7e153 / sqrt(n))."""
    return math.sqrt(float(np.finfo(np.float64).max) / (4.0 * max(n, 1)))


def _as_scores(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise UsageError(f"{name} has shape {arr.shape}; expected one score per item (1-D)")
    if arr.size == 0:
        raise UsageError(f"{name} is empty", hint="pass at least one scored item")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise UsageError(
            f"{name}[{bad[0]}] = {arr[bad[0]]} is not a finite score", hint="drop or fix the item before comparing"
        )
    limit = max_safe_score(arr.size)
    big = np.flatnonzero(np.abs(arr) > limit)
    if big.size:
        raise UsageError(
            f"{name}[{big[0]}] = {arr[big[0]]:g} is too large: sums and variances of {arr.size} such "
            f"scores overflow float64 (|score| must be <= {limit:.3g})",
            hint="rescale the scores (divide by a constant) before comparing",
        )
    return arr


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:  # NaN fails the comparison too
        raise UsageError(f"level={level} is not in (0, 1)", hint="pass e.g. 0.95")


def _is_binary(arr: np.ndarray) -> bool:
    return bool(np.all((arr == 0.0) | (arr == 1.0)))


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on paired 0/1 scores. ``a_only``: items A got right and B wrong; ``b_only`` the
    reverse. ``method`` is ``exact`` (binomial, two-sided) or ``chi2`` (continuity-corrected)."""

    a_only: int
    b_only: int
    statistic: float
    p_value: float
    method: Literal["exact", "chi2"]


def mcnemar_p_values(a_only: np.ndarray, b_only: np.ndarray) -> np.ndarray:
    """Vectorized McNemar p-values for arrays of discordant counts (exact when b + c <= 25).

    Reference: McNemar 1947, Psychometrika 12:153; exact form p = min(1, 2 * Binom(n_d, 1/2).cdf(min)).
    """
    from scipy import stats

    b = np.asarray(a_only, dtype=np.int64)
    c = np.asarray(b_only, dtype=np.int64)
    nd = b + c
    exact = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(b, c), nd, 0.5))
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = np.where(nd > 0, (np.abs(b - c) - 1.0) ** 2 / np.maximum(nd, 1), 0.0)
    approx = stats.chi2.sf(chi2, 1)
    return np.where(nd <= EXACT_MAX_DISCORDANT, exact, approx)


def mcnemar_test(scores_a: Sequence[float] | np.ndarray, scores_b: Sequence[float] | np.ndarray) -> McNemarResult:
    """McNemar's test of equal accuracy for two models scored 0/1 on the same items, in the same order.

    Args:
        scores_a: 0/1 per item for model A.
        scores_b: 0/1 per item for model B, same items in the same order.

    Returns:
        McNemarResult: exact binomial p when the discordant count is <= 25, else chi-squared with
        continuity correction ``(|b - c| - 1)^2 / (b + c)``, as ``statsmodels...mcnemar``.

    Raises:
        UsageError: lengths differ or a score is not 0 or 1 (naming the first bad item).

    Example:
        >>> r = mcnemar_test([1, 1, 1, 0, 1, 0], [0, 0, 1, 0, 1, 0]); (r.a_only, r.b_only, r.method)
        (2, 0, 'exact')
    """
    a, b = _as_scores(scores_a, "scores_a"), _as_scores(scores_b, "scores_b")
    if a.shape != b.shape:
        raise UsageError(f"scores_a has {a.size} items and scores_b {b.size}; McNemar needs the same items")
    for name, arr in (("scores_a", a), ("scores_b", b)):
        bad = np.flatnonzero((arr != 0.0) & (arr != 1.0))
        if bad.size:
            raise UsageError(
                f"{name}[{bad[0]}] = {arr[bad[0]]:g} is not 0 or 1; McNemar needs binary scores",
                hint="use the paired bootstrap (compare_paired) for graded scores",
            )
    a_only = int(np.sum((a == 1) & (b == 0)))
    b_only = int(np.sum((a == 0) & (b == 1)))
    nd = a_only + b_only
    p = float(mcnemar_p_values(np.array(a_only), np.array(b_only)))
    if nd <= EXACT_MAX_DISCORDANT:
        return McNemarResult(a_only, b_only, float(min(a_only, b_only)), p, "exact")
    stat = (abs(a_only - b_only) - 1.0) ** 2 / nd
    return McNemarResult(a_only, b_only, stat, p, "chi2")


@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile interval of the mean of ``a - b`` over ``n_boot`` paired resamples of the items."""

    delta: float
    low: float
    high: float
    p_value: float
    std_error: float
    n_boot: int
    seed: int
    level: float


def _bootstrap_means(d: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``d``, vectorized."""
    n = d.size
    values, counts = np.unique(d, return_counts=True)
    if values.size <= _MAX_DISTINCT_FOR_COUNTS:
        # resampled counts of each distinct value: Multinomial(n, counts / n), (n_boot, n_values)
        draws = rng.multinomial(n, counts / n, size=n_boot)
        return draws @ values / n
    out = np.empty(n_boot)
    chunk = max(1, 2_000_000 // n)  # ~16 MB of int64 indices per chunk
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))  # (chunk, n)
        out[start:stop] = d[idx].mean(axis=1)
    return out


def paired_bootstrap(
    scores_a: Sequence[float] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapInterval:
    """Seeded paired bootstrap of ``mean(a - b)``: items are resampled together for both models.

    The p-value is two-sided: twice the share of resampled deltas on the other side of 0
    (Efron & Tibshirani 1993, ch. 15-16), floored at 1 / n_boot.

    Example:
        >>> bi = paired_bootstrap([1, 1, 0, 1] * 50, [1, 0, 0, 1] * 50, seed=0); round(bi.delta, 2)
        0.25
    """
    a, b = _as_scores(scores_a, "scores_a"), _as_scores(scores_b, "scores_b")
    if a.shape != b.shape:
        raise UsageError(f"scores_a has {a.size} items and scores_b {b.size}; a paired bootstrap needs the same items")
    if n_boot < 100:
        raise UsageError(f"n_boot={n_boot} is too few resamples", hint="use at least 1000 (default 10000)")
    _check_level(level)
    d = a - b
    means = _bootstrap_means(d, n_boot, np.random.default_rng(seed))
    alpha = 1.0 - level
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    delta = float(d.mean())
    if np.all(d == 0):
        p = 1.0
    else:
        below, above = np.mean(means <= 0.0), np.mean(means >= 0.0)
        p = float(min(1.0, max(2.0 * min(below, above), 1.0 / n_boot)))
    return BootstrapInterval(delta, float(low), float(high), p, float(means.std(ddof=1)), n_boot, seed, level)


@dataclass(frozen=True)
class PairedComparison:
    """Model A minus model B. ``delta`` is mean(A) - mean(B); ``low``/``high`` its interval.

    ``mde``: the smallest |delta| a test at this n would call significant given the observed spread
    (``z * se``). ``n_needed``: items (per model) that would give 80% power at the observed delta,
    None when delta is 0. ``correlation``: Pearson correlation of per-item scores (None if unpaired
    or a model's scores are constant). ``note`` says what was done when it is not the plain method.
    """

    method: str
    paired: bool
    n_a: int
    n_b: int
    n_common: int
    mean_a: float
    mean_b: float
    delta: float
    low: float
    high: float
    level: float
    p_value: float
    correlation: float | None
    mde: float
    verdict: VerdictWord
    n_needed: int | None
    verdict_text: str
    n_clusters: int | None = None
    a_only: int | None = None
    b_only: int | None = None
    note: str = ""


def _verdict(
    delta: float, low: float, high: float, sd_d: float, n: int, level: float
) -> tuple[VerdictWord, int | None, str]:
    if low > 0.0:
        return "better", None, "better"
    if high < 0.0:
        return "worse", None, "worse"
    if delta == 0.0:
        return "inconclusive", None, "inconclusive (no difference observed)"
    if sd_d == 0.0:  # every item differs by delta: a difference seen on too few items, not no difference
        return "inconclusive", None, f"inconclusive (every item differs by {delta:+.4g}; {n} items are too few)"
    z_beta = NormalDist().inv_cdf(_POWER_FOR_NEEDED_N)
    needed = math.ceil(((_z(level) + z_beta) * sd_d / abs(delta)) ** 2)
    return "inconclusive", needed, f"inconclusive (need ~{needed:,} items)"


def _correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.size < 2 or a.std() == 0.0 or b.std() == 0.0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def two_sided_normal_p(delta: float, se: float) -> float:
    """Two-sided normal p-value of ``delta`` with standard error ``se``: ``erfc(|z| / sqrt 2)``.

    The survival function, not ``2 * (1 - cdf(z))``: that difference is exactly 0 from z ~ 8.3 on, where the
    true p is still 1e-16 and more (z = 14.6 gives 2.8e-48 here, 0.0 there). It underflows to 0 only past
    z ~ 38.5 (p < 5e-324, the smallest float), which the renderers print as a bound. With ``se == 0`` every
    item differs by the same amount: p is 0 when that amount is not 0 (a certain difference) and 1 when it is.

    Example:
        >>> f"{two_sided_normal_p(14.6, 1.0):.3g}"
        '2.81e-48'
    """
    if se == 0.0:
        return 0.0 if delta != 0.0 else 1.0
    return math.erfc(abs(delta) / se / math.sqrt(2.0))


def _clustered(d: np.ndarray, clusters: np.ndarray, level: float) -> tuple[float, float, float, float, int]:
    """Cluster-robust standard error of mean(d) (Miller 2024, arXiv:2411.00640, eq. 4), with the
    G / (G - 1) small-sample factor; returns (se, low, high, p, G)."""
    _, inverse = np.unique(clusters, return_inverse=True)
    g = int(inverse.max()) + 1
    if g < 2:
        raise UsageError("all items are in one cluster; a clustered standard error needs >= 2 clusters")
    resid = d - d.mean()
    sums = np.bincount(inverse, weights=resid, minlength=g)
    se = math.sqrt(g / (g - 1) * float(np.sum(sums**2))) / d.size
    z = _z(level)
    delta = float(d.mean())
    return se, delta - z * se, delta + z * se, two_sided_normal_p(delta, se), g


def compare_paired(
    scores_a: Sequence[float] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Hashable] | np.ndarray | None = None,
    level: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> PairedComparison:
    """Compare A and B scored on the same items (same order).

    0/1 scores: McNemar's p (exact when <= 25 discordant items) and the Agresti-Min interval for the
    paired difference (Agresti & Min 2005, Stat Med 24:729: add 1/2 to each cell of the 2x2 table).
    Other scores: the seeded paired bootstrap. With ``clusters``: a cluster-robust standard error
    (normal interval and p) for either kind.

    Raises:
        UsageError: lengths differ, non-finite scores, a bad level.

    Example:
        >>> c = compare_paired([1, 1, 0, 1] * 100, [1, 0, 0, 1] * 100); c.method, c.verdict
        ('mcnemar-chi2', 'better')
    """
    a, b = _as_scores(scores_a, "scores_a"), _as_scores(scores_b, "scores_b")
    if a.shape != b.shape:
        raise UsageError(
            f"scores_a has {a.size} items and scores_b {b.size}; use compare_models for differing item sets"
        )
    _check_level(level)
    n = a.size
    d = a - b
    sd_d = float(d.std(ddof=1)) if n > 1 else 0.0
    z = _z(level)
    corr = _correlation(a, b)
    delta = float(d.mean())
    a_only = b_only = g = None
    note = ""
    if clusters is not None:
        cl = np.asarray(clusters)
        if cl.shape != a.shape:
            raise UsageError(f"clusters has {cl.size} entries for {n} items; give one cluster key per item")
        se, low, high, p, g = _clustered(d, cl, level)
        method = "clustered-se"
        sd_eff = se * math.sqrt(n)  # design-effect-inflated per-item spread, for mde and n_needed
    elif _is_binary(a) and _is_binary(b):
        mc = mcnemar_test(a, b)
        a_only, b_only, p = mc.a_only, mc.b_only, mc.p_value
        # Agresti-Min: 1/2 added to each of the 4 cells, so n -> n + 2
        p12, p21 = (a_only + 0.5) / (n + 2), (b_only + 0.5) / (n + 2)
        se_adj = math.sqrt(max(p12 + p21 - (p12 - p21) ** 2, 0.0) / (n + 2))
        low, high = (p12 - p21) - z * se_adj, (p12 - p21) + z * se_adj
        low, high = max(-1.0, low), min(1.0, high)
        method = f"mcnemar-{mc.method}"
        sd_eff = sd_d
    else:
        bi = paired_bootstrap(a, b, n_boot=n_boot, seed=seed, level=level)
        low, high, p = bi.low, bi.high, bi.p_value
        method = "paired-bootstrap"
        sd_eff = sd_d
        note = f"B = {n_boot:,} resamples, seed {seed}"
    verdict, needed, text = _verdict(delta, low, high, sd_eff, n, level)
    return PairedComparison(
        method=method,
        paired=True,
        n_a=n,
        n_b=n,
        n_common=n,
        mean_a=float(a.mean()),
        mean_b=float(b.mean()),
        delta=delta,
        low=float(low),
        high=float(high),
        level=level,
        p_value=float(p),
        correlation=corr,
        mde=z * sd_eff / math.sqrt(n),
        verdict=verdict,
        n_needed=needed,
        verdict_text=text,
        n_clusters=g,
        a_only=a_only,
        b_only=b_only,
        note=note,
    )


def _compare_unpaired(a: np.ndarray, b: np.ndarray, level: float, note: str) -> PairedComparison:
    """Two independent samples: Newcombe interval + pooled z-test for 0/1, else Welch normal interval."""
    from expkit.stats.intervals import newcombe_interval

    z = _z(level)
    na, nb = a.size, b.size
    delta = float(a.mean() - b.mean())
    if _is_binary(a) and _is_binary(b):
        ka, kb = int(a.sum()), int(b.sum())
        iv = newcombe_interval(ka, na, kb, nb, level=level)
        low, high, method = iv.low, iv.high, "unpaired-newcombe"
        pooled = (ka + kb) / (na + nb)
        se0 = math.sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb))
        p = two_sided_normal_p(delta, se0)
    else:
        va = float(a.var(ddof=1)) if na > 1 else 0.0
        vb = float(b.var(ddof=1)) if nb > 1 else 0.0
        se = math.sqrt(va / na + vb / nb)
        low, high, method = delta - z * se, delta + z * se, "unpaired-welch"
        p = two_sided_normal_p(delta, se)
    va, vb = float(a.var()), float(b.var())
    # per-model spread of the difference of two independent means at equal n: sqrt(va + vb)
    sd_eff = math.sqrt(va + vb)
    n_eff = min(na, nb)
    verdict, needed, text = _verdict(delta, low, high, sd_eff, n_eff, level)
    return PairedComparison(
        method=method,
        paired=False,
        n_a=na,
        n_b=nb,
        n_common=0,
        mean_a=float(a.mean()),
        mean_b=float(b.mean()),
        delta=delta,
        low=float(low),
        high=float(high),
        level=level,
        p_value=float(p),
        correlation=None,
        mde=z * math.sqrt(va / na + vb / nb),
        verdict=verdict,
        n_needed=needed,
        verdict_text=text,
        note=note,
    )


Pairing = Literal["shared", "unpaired"]
PAIRINGS: tuple[Pairing, ...] = ("shared", "unpaired")


def compare_models(
    scores_a: Mapping[K, float],
    scores_b: Mapping[K, float],
    *,
    clusters: Mapping[K, Hashable] | None = None,
    level: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int = 0,
    pairing: Pairing = "shared",
) -> PairedComparison:
    """Compare two models given ``{item_id: score}`` (A = ``scores_a``, B = ``scores_b``; delta = A - B).

    ``pairing="shared"`` (the default): a paired comparison on the items both scored; when the item sets
    differ, ``note`` states how many items were dropped from each side. ``pairing="unpaired"``: an
    unpaired comparison of all the items of each model (wider interval, no pairing assumed), only when
    asked for.

    Raises:
        UsageError: empty inputs; a cluster key missing for an item; no shared item to pair on; an
            unknown ``pairing``.

    Example:
        >>> c = compare_models({"q1": 1, "q2": 0, "q3": 1}, {"q1": 1, "q2": 1, "q4": 0}); c.paired, c.n_common
        (True, 2)
        >>> c.note[:43]
        'paired on the 2 shared items; dropped 1 onl'
    """
    if pairing not in PAIRINGS:
        raise UsageError(f"pairing {pairing!r} is not known", hint=f"one of: {', '.join(PAIRINGS)}")
    if not scores_a or not scores_b:
        raise UsageError("a model has no scored items", hint="each model needs at least one item")
    keys_b = set(scores_b)
    shared = [k for k in scores_a if k in keys_b]
    only_a, only_b = len(scores_a) - len(shared), len(scores_b) - len(shared)
    if pairing == "unpaired":
        note = (
            f"compared unpaired as asked: all {len(scores_a)} items of A and {len(scores_b)} of B "
            f"({len(shared)} shared)"
        )
        if clusters is not None:
            note += "; cluster keys are not used by the unpaired comparison"
        a = _as_scores(list(scores_a.values()), "scores_a")
        b = _as_scores(list(scores_b.values()), "scores_b")
        return _compare_unpaired(a, b, level, note)
    if not shared:
        raise UsageError(
            f"the two models share no item ({len(scores_a)} and {len(scores_b)} items): nothing to pair",
            hint="score both models on the same items, or ask for an unpaired comparison",
        )
    a = np.fromiter((scores_a[k] for k in shared), dtype=np.float64, count=len(shared))
    b = np.fromiter((scores_b[k] for k in shared), dtype=np.float64, count=len(shared))
    cl = None
    if clusters is not None:
        missing = [k for k in shared if k not in clusters]
        if missing:
            raise UsageError(f"item {missing[0]!r} has no cluster key ({len(missing)} items without one)")
        cl = np.array([str(clusters[k]) for k in shared])
    c = compare_paired(a, b, clusters=cl, level=level, n_boot=n_boot, seed=seed)
    if only_a or only_b:
        dropped = (
            f"paired on the {len(shared)} shared items; dropped {only_a} only in A (of {len(scores_a)}) "
            f"and {only_b} only in B (of {len(scores_b)})"
        )
        c = replace(c, n_a=len(scores_a), n_b=len(scores_b), note="; ".join(x for x in (dropped, c.note) if x))
    return c
