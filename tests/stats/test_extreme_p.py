"""p-values never round to 0 (issue 21 item 3): survival functions, Holm without rounding, printed bounds."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from expkit.render.numbers import format_p
from expkit.stats.multiplicity import holm_adjust
from expkit.stats.paired import two_sided_normal_p


@pytest.mark.parametrize("z", [1.96, 8.5, 14.6, 30.0, 37.0])
def test_two_sided_p_matches_mpmath_far_in_the_tail(z: float) -> None:
    # mpmath at 50 digits: erfc(z / sqrt 2), the two-sided normal tail. 1e-12 relative: erfc is accurate to a
    # few ulp over this range; 2 * (1 - cdf) was 0.0 from z ~ 8.3 on.
    mpmath.mp.dps = 50
    truth = float(mpmath.erfc(mpmath.mpf(z) / mpmath.sqrt(2)))
    assert two_sided_normal_p(z, 1.0) == pytest.approx(truth, rel=1e-12)
    assert two_sided_normal_p(z, 1.0) > 0.0


def test_zero_spread_with_a_difference_is_not_no_difference() -> None:
    assert two_sided_normal_p(-1.0, 0.0) == 0.0  # every item differs by the same amount: a certain difference
    assert two_sided_normal_p(0.0, 0.0) == 1.0


def test_holm_does_not_round_small_p_to_zero() -> None:
    # statsmodels: multipletests([4.68e-18], method="holm")[1] -> [4.68e-18]; with a second p of 0.5 -> 9.36e-18
    from statsmodels.stats.multitest import multipletests

    for ps in ([4.68e-18], [4.68e-18, 0.5], [1e-300, 2e-300, 0.01]):
        ours = holm_adjust(ps)
        theirs = multipletests(ps, method="holm")[1]
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
        assert all(a >= p > 0 for a, p in zip(ours, ps, strict=True))  # adjusted >= raw, never 0


def test_unpaired_p_far_in_the_tail_is_not_zero() -> None:
    # the unpaired (Welch) path, asked for: z = 1 / sqrt(2 * 0.01 / 400) ~ 141 is beyond any float,
    # so use a spread that puts z near 14.6, where 2 * (1 - cdf) printed 0 and the true p is ~3e-48
    from expkit.stats.paired import compare_models

    rng = np.random.default_rng(0)
    a = {f"a{i}": float(v) for i, v in enumerate(rng.normal(1.0, 1.0, 400))}
    b = {f"b{i}": float(v) for i, v in enumerate(rng.normal(0.0, 1.0, 400))}
    res = compare_models(a, b, pairing="unpaired")
    assert res.method == "unpaired-welch"
    va, vb = np.var(list(a.values()), ddof=1), np.var(list(b.values()), ddof=1)
    z = abs(np.mean(list(a.values())) - np.mean(list(b.values()))) / math.sqrt(va / 400 + vb / 400)
    mpmath.mp.dps = 50
    assert res.p_value == pytest.approx(float(mpmath.erfc(mpmath.mpf(float(z)) / mpmath.sqrt(2))), rel=1e-9)
    assert 0.0 < res.p_value < 1e-40


def test_printed_p_is_a_bound_where_the_float_cannot_hold_it() -> None:
    assert format_p(0.0) == "< 1e-300"
    assert format_p(2.8e-48) == "2.8e-48"
    assert format_p(math.nextafter(0.0, 1.0)) == "< 1e-300"
