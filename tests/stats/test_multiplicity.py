"""Holm's adjustment against statsmodels, and its identities."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.errors import UsageError
from expkit.stats.multiplicity import holm_adjust


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        # statsmodels.stats.multitest.multipletests(p, method="holm")[1]
        ([0.01, 0.02, 0.03, 0.04, 0.5], [0.05, 0.08, 0.09, 0.09, 0.5]),
        ([0.04, 0.001, 0.03, 0.2], [0.09, 0.004, 0.09, 0.2]),
    ],
)
def test_holm_matches_statsmodels(p, expected):
    assert holm_adjust(p) == pytest.approx(expected, abs=1e-15)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=30))
def test_holm_is_between_raw_and_bonferroni(p):
    adj = holm_adjust(p)
    m = len(p)
    for raw, a in zip(p, adj, strict=True):
        assert raw - 1e-15 <= a <= min(1.0, raw * m) + 1e-12


def test_bad_p_value_is_named():
    with pytest.raises(UsageError, match=r"p_values\[1\] = 1.5"):
        holm_adjust([0.1, 1.5])
    assert holm_adjust([]) == ()
