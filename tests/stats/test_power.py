"""Power and sample size against statsmodels' NormalIndPower, and identities."""

from __future__ import annotations

import math

import pytest

from expkit.errors import UsageError
from expkit.stats.power import analyze_power, max_paired_correlation, power_at, required_items

VA, VB = 0.7 * 0.3, 0.75 * 0.25


def test_unpaired_power_matches_statsmodels():
    # statsmodels NormalIndPower().power(effect_size=0.05/sqrt((VA+VB)/2), nobs1=80, alpha=0.05)
    # = 0.10933403689806374 (effect size in units of the average sd makes the two formulas identical)
    assert power_at(baseline=0.7, delta=0.05, n=80) == pytest.approx(0.10933403689806374, rel=1e-12)


def test_unpaired_n_required_is_the_ceiling_of_statsmodels_solution():
    # NormalIndPower().solve_power(effect_size=0.05/sqrt((VA+VB)/2), power=0.8, alpha=0.05) = 1247.9688
    assert required_items(baseline=0.7, delta=0.05) == 1248


def test_paired_matches_statsmodels_one_sample():
    sd = math.sqrt(VA + VB - 2 * 0.5 * math.sqrt(VA * VB))
    # NormalIndPower().solve_power(effect_size=0.05/sd, power=0.8, alpha=0.05, ratio=0) = 624.9848
    assert required_items(baseline=0.7, delta=0.05, paired_corr=0.5) == 625
    # the closed form ((z_.975 + z_.8) sd / delta)^2 = 624.98 rounds up to the same n
    assert math.ceil(((1.959963984540054 + 0.8416212335729143) * sd / 0.05) ** 2) == 625
    # NormalIndPower().power(effect_size=0.05/sd, nobs1=300, alpha=0.05, ratio=0) = 0.49248934276945444
    assert power_at(baseline=0.7, delta=0.05, n=300, paired_corr=0.5) == pytest.approx(0.49248934276945444, rel=1e-12)


def test_zero_correlation_equals_unpaired():
    assert required_items(baseline=0.6, delta=0.04, paired_corr=0.0) == required_items(baseline=0.6, delta=0.04)


def test_analysis_fields_are_consistent():
    a = analyze_power(baseline=0.7, delta=0.05, paired_corr=0.5)
    assert a.n == a.n_required and a.power >= 0.8
    assert power_at(baseline=0.7, delta=0.05, n=a.n_required - 1, paired_corr=0.5) < 0.8
    assert a.mde == pytest.approx(0.05, abs=2e-4)  # at n_required, the mde is the delta asked for
    b = analyze_power(baseline=0.7, delta=0.05, n=80)
    assert b.mde > 0.15 and b.power < 0.12


def test_impossible_correlation_is_refused_with_the_maximum():
    rho = max_paired_correlation(0.7, 0.75)
    with pytest.raises(UsageError, match=rf"at most {rho:.3f}"):
        required_items(baseline=0.7, delta=0.05, paired_corr=0.99)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"baseline": 1.2, "delta": 0.05}, r"baseline=1.2"),
        ({"baseline": 0.98, "delta": 0.05}, r"baseline \+ delta"),
        ({"baseline": 0.7, "delta": 0.0}, r"delta=0"),
    ],
)
def test_bad_values(kw, msg):
    with pytest.raises(UsageError, match=msg):
        required_items(**kw)
