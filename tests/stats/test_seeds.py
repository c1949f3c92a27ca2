"""Seed statistics against scipy: t-interval, Welch, trimmed mean; and noise floor by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.errors import UsageError
from expkit.stats.seeds import iqm, iqm_interval, summarize_seeds, t_interval, welch_interval


def test_t_interval_matches_scipy():
    # scipy.stats.t.interval(0.95, 4, loc=2.04, scale=sem([2.0, 2.2, 1.9, 2.1, 2.0]))
    # = (1.8984285223017727, 2.1815714776982276)
    iv = t_interval([2.0, 2.2, 1.9, 2.1, 2.0])
    assert (iv.low, iv.high) == pytest.approx((1.8984285223017727, 2.1815714776982276), rel=1e-12)
    # scipy.stats.t.interval(0.9, 5, loc=mean(x), scale=sem(x)), x below = (2.8927599862044358, 3.2739066804622308)
    iv90 = t_interval([3.1, 2.9, 3.4, 3.0, 3.3, 2.8], level=0.9)
    assert (iv90.low, iv90.high) == pytest.approx((2.8927599862044358, 3.2739066804622308), rel=1e-12)


def test_welch_matches_scipy_ttest_ind():
    # scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95): (-0.526947009804832,
    # -0.17638632352850114), df 8.995338525163298
    iv = welch_interval([2.0, 2.2, 1.9, 2.1, 2.0], [2.3, 2.5, 2.2, 2.6, 2.4, 2.35])
    assert (iv.low, iv.high) == pytest.approx((-0.526947009804832, -0.17638632352850114), rel=1e-10)
    assert iv.df == pytest.approx(8.995338525163298, rel=1e-12)
    assert iv.excludes_zero


def test_iqm_is_the_25_percent_trimmed_mean():
    # scipy.stats.trim_mean([1, 2, 3, 4, 5, 6, 7, 100], 0.25) = 4.5: the outlier seed does not move it
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == 4.5


def test_noise_floor_by_hand():
    s = summarize_seeds([2.0, 2.2, 1.9, 2.1, 2.0])
    # t_{0.975, 8} = 2.306004135204166 (scipy.stats.t.ppf(0.975, 8)); sd = 0.114017543; sqrt(2/5)
    assert s.noise_floor == pytest.approx(2.306004135204166 * 0.11401754250991379 * math.sqrt(0.4), rel=1e-9)
    assert s.n_seeds == 5 and s.min == 1.9 and s.max == 2.2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=-1e3, max_value=1e3, allow_nan=False), min_size=2, max_size=20))
def test_intervals_contain_their_estimate(values):
    iv = t_interval(values)
    assert iv.low <= iv.estimate <= iv.high
    b = iqm_interval(values, n_boot=200)
    assert min(values) - 1e-9 <= b.low <= b.high <= max(values) + 1e-9


def test_one_seed_and_diverged_seed_are_refused():
    with pytest.raises(UsageError, match=r"1 seeds; need at least 2"):
        t_interval([1.0])
    with pytest.raises(UsageError, match=r"values\[2\] = nan is not finite"):
        t_interval([1.0, 2.0, float("nan")])


def test_identical_seeds_give_zero_width():
    iv = welch_interval(np.ones(3), np.ones(4) * 2)
    assert iv.low == iv.high == -1.0
