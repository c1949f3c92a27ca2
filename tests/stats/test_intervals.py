"""Proportion intervals against hand derivations, R and scipy, plus their identities."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from expkit.errors import UsageError
from expkit.stats import (
    clopper_pearson_interval,
    min_detectable_difference,
    newcombe_interval,
    proportion_interval,
    wald_interval,
    wilson_interval,
)

# float64 arithmetic on closed forms: agreement to 1e-12 is expected; scipy's beta inverse is
# iterative, so the exact interval gets 1e-9.
TIGHT = 1e-12


def test_wald_half_width_at_80_is_the_seed_figure():
    # seed C2.2: 1.96*sqrt(.25/80) = 0.10957 (z = 1.959964 here, 1.96 in the seed)
    iv = wald_interval(40, 80)
    assert iv.half_width == pytest.approx(1.959963984540054 * math.sqrt(0.25 / 80), abs=TIGHT)
    assert round(iv.half_width, 4) == 0.1096
    assert (iv.low, iv.high) == pytest.approx((0.5 - iv.half_width, 0.5 + iv.half_width), abs=TIGHT)


def test_wilson_matches_r_prop_test():
    # R 4.3: prop.test(40, 80, correct=FALSE)$conf.int -> 0.3929742 0.6070258
    iv = wilson_interval(40, 80)
    assert (iv.low, iv.high) == pytest.approx((0.3929742, 0.6070258), abs=5e-8)
    # R: prop.test(3, 10, correct=FALSE)$conf.int -> 0.1077913 0.6032219
    iv = wilson_interval(3, 10)
    assert (iv.low, iv.high) == pytest.approx((0.1077913, 0.6032219), abs=5e-8)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (40, 80), (79, 80), (80, 80), (1, 1), (500, 5000)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_and_exact_match_scipy(k, n, level):
    from scipy.stats import binomtest

    ref = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    iv = wilson_interval(k, n, level=level)
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=TIGHT)
    ref = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    iv = clopper_pearson_interval(k, n, level=level)
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=1e-9)


def test_exact_edges_are_closed_form():
    # k = 0: high = 1 - (alpha/2)^(1/n) (hand derivation from the beta quantile)
    iv = clopper_pearson_interval(0, 20)
    assert iv.low == 0.0
    assert iv.high == pytest.approx(1 - 0.025 ** (1 / 20), abs=1e-12)


def test_newcombe_matches_statsmodels():
    from statsmodels.stats.proportion import confint_proportions_2indep

    ref = confint_proportions_2indep(56, 70, 48, 80, method="newcomb", compare="diff")
    iv = newcombe_interval(56, 70, 48, 80)
    assert (iv.low, iv.high) == pytest.approx(ref, abs=TIGHT)


def test_min_detectable_difference_at_80():
    # hand: 1.959964 * sqrt(2 * .25 / 80) = 1.959964 * 0.0790569 = 0.154949
    assert min_detectable_difference(80) == pytest.approx(0.154949, abs=1e-6)


@given(
    n=st.integers(1, 10_000),
    data=st.data(),
    method=st.sampled_from(["wald", "wilson", "exact"]),
    level=st.floats(0.5, 0.999),
)
def test_interval_contains_estimate_and_stays_in_unit_range(n, data, method, level):
    k = data.draw(st.integers(0, n))
    iv = proportion_interval(k, n, method=method, level=level)
    assert 0.0 <= iv.low <= iv.estimate <= iv.high <= 1.0
    assert iv.half_width == pytest.approx((iv.high - iv.low) / 2)


@given(p=st.floats(0.05, 0.95), method=st.sampled_from(["wald", "wilson", "exact"]))
def test_interval_narrows_as_n_grows(p, method):
    widths = [proportion_interval(round(p * n), n, method=method).half_width for n in (50, 200, 800, 3200)]
    assert widths == sorted(widths, reverse=True)


@pytest.mark.parametrize(
    "k,n,level,match",
    [
        (81, 80, 0.95, r"correct=81 is larger than n=80"),
        (0, 0, 0.95, r"n=0"),
        (-1, 10, 0.95, r"correct=-1 is negative"),
        (5, 10, 1.5, r"level=1.5"),
        (5, 10, 0.0, r"level=0.0"),
    ],
)
def test_bad_input_names_the_value(k, n, level, match):
    with pytest.raises(UsageError, match=match):
        wilson_interval(k, n, level=level)


def test_unknown_method():
    with pytest.raises(UsageError, match=r"method='agresti'.*wald, wilson, exact"):
        proportion_interval(1, 2, method="agresti")
