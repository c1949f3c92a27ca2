"""Power and sample size for comparing two accuracies, unpaired or paired (same items, correlated).

A two-sided z-test on the difference ``d = p_b - p_a`` with standard error ``sd_d / sqrt(n)``:
power(n) = Phi(|delta| sqrt(n) / sd_d - z_{1-alpha/2}) + Phi(-|delta| sqrt(n) / sd_d - z_{1-alpha/2})
(Chow, Shao & Wang, *Sample Size Calculations in Clinical Research*, 2nd ed., sec. 4.2 and 4.5).
Unpaired: sd_d^2 = p_a q_a + p_b q_b. Paired with per-item correlation rho of the 0/1 scores:
sd_d^2 = p_a q_a + p_b q_b - 2 rho sqrt(p_a q_a p_b q_b).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from expkit.errors import UsageError
from expkit.stats.intervals import short_int

__all__ = [
    "PowerAnalysis",
    "analyze_power",
    "max_paired_correlation",
    "min_paired_correlation",
    "power_at",
    "required_items",
]

_ND = NormalDist()
# Largest n the sample-size search reports: beyond it (~1e15 items) the question has no practical answer
# and float64 can no longer tell n from n + 1 in the power formula.
MAX_ITEMS = 10**15


@dataclass(frozen=True)
class PowerAnalysis:
    """Items per model for ``target_power`` (``n_required``); ``power`` at ``n`` (or at n_required);
    ``mde``: the smallest |delta| detected with ``target_power`` at that n. ``sd_diff`` is the
    per-item standard deviation of the score difference the calculation used."""

    baseline: float
    delta: float
    paired_corr: float | None
    alpha: float
    target_power: float
    n_required: int
    n: int
    power: float
    mde: float
    sd_diff: float
    design: str


def _check_prob(name: str, p: float) -> None:
    if not 0.0 < p < 1.0 or math.isnan(p):
        raise UsageError(f"{name}={p} is not an accuracy strictly between 0 and 1")


def max_paired_correlation(p_a: float, p_b: float) -> float:
    """Largest correlation two 0/1 scores with accuracies p_a, p_b can have: the discordant rate is at
    least |p_a - p_b|, so Var(d) >= |delta| - delta^2."""
    va, vb = p_a * (1 - p_a), p_b * (1 - p_b)
    dlt = abs(p_b - p_a)
    return (va + vb - (dlt - dlt * dlt)) / (2.0 * math.sqrt(va * vb))


def min_paired_correlation(p_a: float, p_b: float) -> float:
    """Smallest (most negative) correlation two 0/1 scores with accuracies p_a, p_b can have: both
    right on at least max(0, p_a + p_b - 1) of the items (the Frechet lower bound), so
    rho >= (max(0, p_a + p_b - 1) - p_a p_b) / sqrt(p_a q_a p_b q_b).

    Example:
        >>> round(min_paired_correlation(0.7, 0.75), 3)   # -1 is impossible at these accuracies
        -0.378
    """
    va, vb = p_a * (1 - p_a), p_b * (1 - p_b)
    return (max(0.0, p_a + p_b - 1.0) - p_a * p_b) / math.sqrt(va * vb)


def _sd_diff(baseline: float, delta: float, paired_corr: float | None) -> float:
    p_a, p_b = baseline, baseline + delta
    _check_prob("baseline", p_a)
    _check_prob("baseline + delta", p_b)
    va, vb = p_a * (1 - p_a), p_b * (1 - p_b)
    if paired_corr is None:
        return math.sqrt(va + vb)
    if not -1.0 <= paired_corr <= 1.0:
        raise UsageError(f"paired_corr={paired_corr} is not a correlation in [-1, 1]")
    rho_min, rho_max = min_paired_correlation(p_a, p_b), max_paired_correlation(p_a, p_b)
    if not rho_min - 1e-12 <= paired_corr <= rho_max + 1e-12:
        raise UsageError(
            f"paired_corr={paired_corr} is impossible for accuracies {p_a:g} and {p_b:g}",
            hint=f"0/1 scores with these accuracies correlate at least {rho_min:.3f} and at most "
            f"{rho_max:.3f}: the feasible range is [{rho_min:.3f}, {rho_max:.3f}]",
        )
    return math.sqrt(max(va + vb - 2.0 * paired_corr * math.sqrt(va * vb), 0.0))


def _power(delta: float, sd: float, n: float, alpha: float) -> float:
    if sd == 0.0:
        return 1.0
    z = -_ND.inv_cdf(alpha / 2)  # 1 - alpha / 2 rounds to 1.0 for alpha below 2.2e-16: the quantile raised
    shift = abs(delta) * math.sqrt(n) / sd
    return _ND.cdf(shift - z) + _ND.cdf(-shift - z)


def power_at(*, baseline: float, delta: float, n: int, paired_corr: float | None = None, alpha: float = 0.05) -> float:
    """Power of the two-sided test at ``n`` items per model.

    Example:
        >>> round(power_at(baseline=0.7, delta=0.05, n=80), 3)   # the seed's 80 questions
        0.109
    """
    if n < 1:
        raise UsageError(f"n={n} must be at least 1 item")
    if n > MAX_ITEMS:
        raise UsageError(f"n={short_int(n)} is more items than any eval has (at most {MAX_ITEMS:.0e})")
    return _power(delta, _sd_diff(baseline, delta, paired_corr), n, alpha)


def _check_levels(alpha: float, power: float) -> None:
    if not 0.0 < alpha < 1.0 or math.isnan(alpha):
        raise UsageError(f"alpha={alpha} must be in (0, 1)", hint="pass e.g. 0.05")
    if alpha / 2 == 0.0:  # 5e-324: the two-sided tail underflows and has no normal quantile
        raise UsageError(f"alpha={alpha} is too small: alpha / 2 underflows to 0", hint="pass e.g. 0.05")
    if not 0.0 < power < 1.0 or math.isnan(power):
        raise UsageError(f"power={power} must be in (0, 1)", hint="pass e.g. 0.8")
    if power <= alpha:
        raise UsageError(
            f"power={power} is not above alpha={alpha}: a two-sided test rejects with probability "
            "alpha even when there is no difference, so any gap 'reaches' that power",
            hint="ask for a target power above alpha (0.8 is the usual choice)",
        )


def required_items(
    *, baseline: float, delta: float, paired_corr: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Smallest n (items per model) whose power reaches ``power``.

    Brackets the closed form ``((z_{1-alpha/2} + z_power) sd_d / delta)^2`` (the closed form ignores
    the far tail) and bisects to the exact smallest integer: about 2 log2(n) power evaluations, so a
    tiny delta (n ~ 1e14) answers as fast as a large one.

    Raises:
        UsageError: delta 0, levels out of range, power <= alpha, or an n above MAX_ITEMS (1e15).

    Example:
        >>> required_items(baseline=0.7, delta=0.05)
        1248
    """
    if delta == 0.0 or math.isnan(delta):
        raise UsageError(f"delta={delta}: no sample size detects a zero difference", hint="pass the gap you care about")
    _check_levels(alpha, power)
    sd = _sd_diff(baseline, delta, paired_corr)
    if sd == 0.0:
        return 1
    z_a, z_b = -_ND.inv_cdf(alpha / 2), _ND.inv_cdf(power)
    ratio = (z_a + z_b) * sd / abs(delta)  # may be inf for a denormal delta; squaring it could overflow
    guess = ratio * ratio if ratio <= math.sqrt(MAX_ITEMS) else math.inf
    if not guess <= MAX_ITEMS:
        raise UsageError(
            f"delta={delta:g} needs about {ratio * ratio if ratio < 1e150 else math.inf:.3g} items per "
            f"model, beyond {MAX_ITEMS:.0e}",
            hint="no eval has that many items: a gap this small cannot be measured",
        )

    def reached(n: int) -> bool:
        return _power(delta, sd, n, alpha) >= power

    # bracket: lo fails (or is 0), hi reaches; the closed form is within a few items of the answer
    hi = max(1, math.ceil(guess))
    while not reached(hi):
        hi *= 2
        if hi > 2 * MAX_ITEMS:
            raise UsageError(f"delta={delta:g} needs more than {MAX_ITEMS:.0e} items per model")
    lo = max(0, hi - max(1, hi // 16))
    while lo > 0 and reached(lo):
        hi, lo = lo, lo // 2
    # bisect: the smallest n in (lo, hi] that reaches the target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reached(mid) else (mid, hi)
    return hi


def _mde(baseline: float, n: int, paired_corr: float | None, alpha: float, power: float, sign: float) -> float:
    """Smallest |delta| with power >= ``power`` at n: a scan in steps of 1/1000 (sd depends on delta,
    and large gaps can make a paired correlation impossible), then bisection inside the step."""
    top = (1.0 - baseline if sign > 0 else baseline) - 1e-9

    def ok(dl: float) -> bool:
        try:
            return _power(dl, _sd_diff(baseline, sign * dl, paired_corr), n, alpha) >= power
        except UsageError:  # the correlation is impossible at this gap
            return False

    step = 1e-3
    lo, hi = 0.0, None
    k = 1
    while k * step < top:
        if ok(k * step):
            hi = k * step
            break
        lo = k * step
        k += 1
    if hi is None:
        if not ok(top):
            return math.nan
        hi = top
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def analyze_power(
    *,
    baseline: float,
    delta: float,
    paired_corr: float | None = None,
    n: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> PowerAnalysis:
    """``expkit stats power``: items needed, power at n and the minimum detectable effect.

    Args:
        baseline: accuracy of the reference model, in (0, 1).
        delta: the gap to detect (new - baseline), baseline + delta in (0, 1).
        paired_corr: per-item correlation of the two models' 0/1 scores; None for unpaired.
        n: items per model to evaluate power and mde at; default n_required.
        alpha: two-sided significance level.
        power: target power for n_required and mde.

    Raises:
        UsageError: values out of range, a correlation the margins cannot reach.

    Example:
        >>> a = analyze_power(baseline=0.7, delta=0.05, paired_corr=0.5); a.n_required
        625
    """
    n_req = required_items(baseline=baseline, delta=delta, paired_corr=paired_corr, alpha=alpha, power=power)
    n_eval = n_req if n is None else n
    if n_eval < 1:
        raise UsageError(f"n={n} must be at least 1 item")
    if n_eval > MAX_ITEMS:
        raise UsageError(f"n={short_int(n_eval)} is more items than any eval has (at most {MAX_ITEMS:.0e})")
    sd = _sd_diff(baseline, delta, paired_corr)
    return PowerAnalysis(
        baseline=baseline,
        delta=delta,
        paired_corr=paired_corr,
        alpha=alpha,
        target_power=power,
        n_required=n_req,
        n=n_eval,
        power=_power(delta, sd, n_eval, alpha),
        mde=_mde(baseline, n_eval, paired_corr, alpha, power, 1.0 if delta > 0 else -1.0),
        sd_diff=sd,
        design="unpaired" if paired_corr is None else "paired",
    )
