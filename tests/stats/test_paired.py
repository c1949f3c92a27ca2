"""Paired comparison: McNemar against statsmodels, Agresti-Min by hand, bootstrap properties, clustered SE
against statsmodels OLS, the unpaired fallback, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.errors import UsageError
from expkit.stats.paired import compare_models, compare_paired, mcnemar_test, paired_bootstrap


def _from_table(both: int, a_only: int, b_only: int, neither: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-item 0/1 scores realizing the 2x2 table [[both, a_only], [b_only, neither]]."""
    a = np.array([1] * both + [1] * a_only + [0] * b_only + [0] * neither, dtype=float)
    b = np.array([1] * both + [0] * a_only + [1] * b_only + [0] * neither, dtype=float)
    return a, b


@pytest.mark.parametrize(
    ("table", "method", "p", "stat"),
    [
        # statsmodels.stats.contingency_tables.mcnemar([[50, 7], [2, 21]], exact=True): p 0.1796875, stat 2
        ((50, 7, 2, 21), "exact", 0.1796875, 2.0),
        # mcnemar([[30, 13], [12, 25]], exact=True): p 1.0, stat 12 (25 discordant: still exact)
        ((30, 13, 12, 25), "exact", 1.0, 12.0),
        # mcnemar([[400, 40], [20, 40]], exact=False, correction=True): p 0.014171388254012323, stat 6.0166...
        ((400, 40, 20, 40), "chi2", 0.014171388254012323, 6.016666666666667),
    ],
)
def test_mcnemar_matches_statsmodels(table, method, p, stat):
    a, b = _from_table(*table)
    r = mcnemar_test(a, b)
    assert r.method == method
    # tolerance 1e-12: same closed forms, only float rounding differs
    assert r.p_value == pytest.approx(p, rel=1e-12)
    assert r.statistic == pytest.approx(stat, rel=1e-12)
    assert (r.a_only, r.b_only) == (table[1], table[2])


def test_mcnemar_no_discordant_items_is_p_one():
    # statsmodels' chi2 branch divides by zero here; with 0 discordant items the exact test gives p = 1
    a, b = _from_table(10, 0, 0, 5)
    assert mcnemar_test(a, b).p_value == 1.0


def test_mcnemar_refuses_graded_scores_naming_the_item():
    with pytest.raises(UsageError, match=r"scores_b\[2\] = 0.5 is not 0 or 1"):
        mcnemar_test([1, 0, 1], [1, 1, 0.5])


def test_mcnemar_refuses_different_lengths():
    with pytest.raises(UsageError, match=r"3 items and scores_b 2"):
        mcnemar_test([1, 0, 1], [1, 1])


def test_binary_comparison_uses_agresti_min_interval():
    a, b = _from_table(50, 7, 2, 21)
    c = compare_paired(a, b)
    # hand derivation (Agresti & Min 2005): n = 80, p12 = 7.5/82, p21 = 2.5/82,
    # se = sqrt((p12 + p21 - (p12 - p21)^2) / 82), CI = (p12 - p21) +- 1.959964 se
    p12, p21 = 7.5 / 82, 2.5 / 82
    se = math.sqrt((p12 + p21 - (p12 - p21) ** 2) / 82)
    assert c.low == pytest.approx(p12 - p21 - 1.959963984540054 * se, rel=1e-12)
    assert c.high == pytest.approx(p12 - p21 + 1.959963984540054 * se, rel=1e-12)
    assert c.delta == pytest.approx(5 / 80)
    assert c.method == "mcnemar-exact" and c.p_value == pytest.approx(0.1796875)
    assert c.verdict == "inconclusive" and c.n_needed is not None and c.n_needed > 80
    assert f"need ~{c.n_needed:,} items" in c.verdict_text


def test_clear_difference_is_better_and_reverse_is_worse():
    a, b = _from_table(300, 60, 10, 130)
    assert compare_paired(a, b).verdict == "better"
    assert compare_paired(b, a).verdict == "worse"


def test_clustered_se_matches_statsmodels_ols_cluster():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(30), 10)
    eff = rng.normal(0, 0.3, 30)[g]
    a = (rng.random(300) < 0.6 + 0.1 * eff).astype(float)
    b = (rng.random(300) < 0.55 + 0.1 * eff).astype(float)
    c = compare_paired(a, b, clusters=g)
    ref = sm.OLS(a - b, np.ones(300)).fit(cov_type="cluster", cov_kwds={"groups": g})
    # statsmodels' default small-sample factor equals G/(G-1) here (K = 1); 1e-10: float summation order
    assert (c.high - c.low) / 2 / 1.959963984540054 == pytest.approx(ref.bse[0], rel=1e-10)
    assert c.method == "clustered-se" and c.n_clusters == 30


def test_clusters_widen_the_interval_when_items_are_correlated():
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(20), 50)
    shift = rng.normal(0, 0.5, 20)[g]  # the difference varies by cluster
    a = rng.normal(0.3 + shift, 1.0)
    b = rng.normal(0.0, 1.0, a.size)
    plain = compare_paired(a, b, n_boot=2000)
    clustered = compare_paired(a, b, clusters=g)
    assert clustered.high - clustered.low > 1.5 * (plain.high - plain.low)


def test_bootstrap_is_seeded_and_brackets_the_delta():
    rng = np.random.default_rng(1)
    a = rng.random(500)
    b = a - 0.05 + rng.normal(0, 0.1, 500)
    r1 = paired_bootstrap(a, b, seed=7)
    r2 = paired_bootstrap(a, b, seed=7)
    assert r1 == r2
    assert r1.low < r1.delta < r1.high
    # the bootstrap SE of a mean is close to sd/sqrt(n) (10%: Monte Carlo error with B = 10,000)
    assert r1.std_error == pytest.approx(np.std(a - b, ddof=1) / math.sqrt(500), rel=0.1)
    assert r1.p_value < 0.001


def test_bootstrap_count_path_equals_index_path_in_distribution():
    # 0/1 scores take the multinomial-count path; its SE must match the analytic SE of a mean of d
    rng = np.random.default_rng(2)
    a = (rng.random(2000) < 0.7).astype(float)
    b = (rng.random(2000) < 0.7).astype(float)
    r = paired_bootstrap(a, b, seed=0)
    assert r.std_error == pytest.approx(np.std(a - b, ddof=0) / math.sqrt(2000), rel=0.05)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(min_value=-5, max_value=5, allow_nan=False), min_size=5, max_size=60), st.integers(0, 99))
def test_bootstrap_interval_contains_delta_shift_property(values, seed):
    a = np.array(values)
    b = np.zeros_like(a)
    r = paired_bootstrap(a, b, seed=seed, n_boot=500)
    assert r.low <= r.high
    assert min(a) - 1e-12 <= r.low and r.high <= max(a) + 1e-12


def test_graded_scores_use_the_bootstrap():
    rng = np.random.default_rng(4)
    a = rng.random(300)
    c = compare_paired(a, a - 0.1, n_boot=2000)
    assert c.method == "paired-bootstrap" and c.verdict == "better"
    assert c.correlation == pytest.approx(1.0)


def test_partial_overlap_pairs_on_the_shared_items_and_counts_the_dropped():
    a = {f"q{i}": float(i % 2) for i in range(100)}  # q0..q99
    b = {f"q{i}": float(i % 3 == 0) for i in range(10, 115)}  # q10..q114
    c = compare_models(a, b)
    shared = [f"q{i}" for i in range(10, 100)]
    ref = compare_paired([a[k] for k in shared], [b[k] for k in shared])
    assert c.paired and c.n_common == 90 and (c.n_a, c.n_b) == (100, 105)
    assert (c.delta, c.p_value, c.low, c.high) == (ref.delta, ref.p_value, ref.low, ref.high)
    assert "paired on the 90 shared items; dropped 10 only in A (of 100) and 15 only in B (of 105)" in c.note


def test_unpaired_only_when_asked_and_disjoint_items_are_refused():
    a = {f"q{i}": float(i % 2) for i in range(100)}
    b = {f"q{i}": float(i % 3 == 0) for i in range(10, 110)}
    c = compare_models(a, b, pairing="unpaired")
    assert not c.paired and c.method == "unpaired-newcombe" and c.correlation is None
    assert "unpaired as asked: all 100 items of A and 100 of B (90 shared)" in c.note
    with pytest.raises(UsageError, match="share no item"):
        compare_models({"x": 1.0}, {"y": 0.0})
    with pytest.raises(UsageError, match="pairing 'bogus'"):
        compare_models(a, b, pairing="bogus")  # type: ignore[arg-type]


def test_same_item_sets_in_any_order_are_paired():
    a = {"x": 1.0, "y": 0.0, "z": 1.0}
    b = {"z": 1.0, "x": 0.0, "y": 0.0}
    c = compare_models(a, b)
    assert c.paired and c.a_only == 1 and c.b_only == 0


def test_nan_score_is_refused():
    with pytest.raises(UsageError, match=r"scores_a\[1\] = nan is not a finite score"):
        compare_paired([1.0, float("nan")], [1.0, 0.0])
