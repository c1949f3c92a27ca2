"""The leaderboard's figures against independent computations on tiny hand-checkable fixtures: scores and
counts by hand, exact McNemar p by scipy.stats.binomtest, paired t by scipy.stats.ttest_rel, Holm/BH by
statsmodels' multipletests, rank upper bounds and tiers by hand counts, Kendall tau by scipy.stats.kendalltau,
items for 80 % power by statsmodels' NormalIndPower (ratio=0: the one-sample z test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower

from expkit.errors import UsageError
from expkit.stats.leaderboard import ScoreMatrix, UnparsedPolicy, build_leaderboard, parse_unparsed_policy
from expkit.stats.pairwise import pair_tests
from expkit.stats.ranks import (
    _resampled_means,
    bootstrap_ranks,
    competition_ranks,
    resample_counts,
    split_half_taus,
    tier_letters,
)

NAN = math.nan

# 3 models x 12 items: A 11/12, B 6/12, C 2/12; B's first two items unparsed (null answers)
A = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]
B = [NAN, NAN, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
C = [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0]


def _matrix(rows, names=None, unparsed=None, clusters=None, n_choices=None):
    s = np.array(rows, dtype=np.float64)
    u = np.isnan(s) if unparsed is None else np.array(unparsed)
    names = names or tuple("ABCDEFGH"[: len(rows)])
    return ScoreMatrix(tuple(names), s, u, clusters, (0,) * len(rows), n_choices)


def _board(**kw):
    return build_leaderboard(_matrix([A, B, C]), n_boot=200, **kw)


def test_scores_counts_and_order_by_hand():
    lb = _board()
    assert [m.name for m in lb.models] == ["A", "B", "C"]
    a, b, c = lb.models
    assert (a.score, a.n, a.unparsed) == (11 / 12, 12, 0)
    assert (b.score, b.n, b.unparsed) == (6 / 12, 12, 2)  # wrong: the two nulls count 0
    assert (c.score, c.n) == (2 / 12, 12)
    iv = stats.binomtest(11, 12).proportion_ci(method="wilson")
    assert a.ci_low == pytest.approx(iv.low, abs=1e-12) and a.ci_high == pytest.approx(iv.high, abs=1e-12)


def test_unparsed_policies():
    drop = _board(policy=UnparsedPolicy("drop")).models
    assert {m.name: (m.score, m.n) for m in drop}["B"] == (6 / 10, 10)
    chance = _board(policy=parse_unparsed_policy("chance:4")).models
    assert {m.name: m.score for m in chance}["B"] == pytest.approx((6 + 2 * 0.25) / 12)
    for bad in ("chance", "chance:1", "random", "chance:x"):
        with pytest.raises(UsageError, match="--unparsed"):
            parse_unparsed_policy(bad)


def test_exact_mcnemar_and_holm_against_scipy_and_statsmodels():
    lb = _board()
    by = {(p.a, p.b): p for p in lb.pairs}
    raw = []
    for (i, x), (j, y) in [((0, A), (1, B)), ((0, A), (2, C)), ((1, B), (2, C))]:
        xs, ys = np.nan_to_num(np.array(x, float)), np.nan_to_num(np.array(y, float))  # wrong: null -> 0
        b, c = int(np.sum((xs == 1) & (ys == 0))), int(np.sum((xs == 0) & (ys == 1)))
        p = stats.binomtest(b, b + c, 0.5).pvalue
        pair = by[("ABC"[i], "ABC"[j])]
        assert pair.p == pytest.approx(p, rel=1e-12) and pair.test == "mcnemar-exact"
        assert pair.n_common == 12 and pair.delta == pytest.approx((b - c) / 12)
        raw.append(p)
    reject, adj, _, _ = multipletests(raw, alpha=0.05, method="holm")
    assert [p.p_adjusted for p in lb.pairs] == pytest.approx(list(adj), rel=1e-12)
    assert [p.distinguishable for p in lb.pairs] == list(reject)
    # hand count: A-C has 9 vs 0 discordant items -> p = 2 / 2^9 = 0.0039, Holm x3 = 0.0117 < 0.05
    assert by[("A", "C")].p == pytest.approx(2 / 2**9) and by[("A", "C")].p_adjusted == pytest.approx(6 / 2**9)
    assert by[("A", "C")].distinguishable
    # A-B 5 vs 0 -> 2 / 2^5 = 0.0625; B-C 6 vs 2 -> 2 (1 + 8 + 28) / 2^8 = 0.289
    assert by[("A", "B")].p == pytest.approx(2 / 2**5) and by[("B", "C")].p == pytest.approx(74 / 256)


def test_bh_and_none_against_statsmodels():
    rng = np.random.default_rng(3)
    rows = [(rng.random(60) < p).astype(float) for p in (0.8, 0.7, 0.55, 0.5, 0.3)]
    raw = [p.p for p in build_leaderboard(_matrix(rows), adjust="none", n_boot=20).pairs]
    bh = build_leaderboard(_matrix(rows), adjust="bh", n_boot=20).pairs
    assert [p.p_adjusted for p in bh] == pytest.approx(list(multipletests(raw, method="fdr_bh")[1]), rel=1e-12)
    assert [p.distinguishable for p in bh] == list(multipletests(raw, alpha=0.05, method="fdr_bh")[0])
    with pytest.raises(UsageError, match="--adjust 'bonferroni'"):
        build_leaderboard(_matrix(rows), adjust="bonferroni")


def test_rank_upper_bound_and_tiers_by_hand():
    lb = _board()
    # separated (Holm): A-C only (A-B p = 0.0625, B-C p = 0.289). Upper bounds: A 1, B 1, C 1 + 1 (A) = 2
    assert [m.rank_upper_bound for m in lb.models] == [1, 1, 2]
    assert [m.tier for m in lb.models] == ["a", "ab", "b"]
    assert [m.rank for m in lb.models] == [1, 2, 3]


def test_common_items_only_and_the_count_says_so():
    x = [1, 1, 1, 1, 0, 0, NAN, NAN]
    y = [1, 0, 0, 0, 0, 1, 1, 1]
    t = pair_tests(np.array([x, y]), alpha=0.05)
    assert t.n_common[0, 1] == 6
    assert t.delta[0, 1] == pytest.approx((4 - 2) / 6)
    assert t.p[0, 1] == pytest.approx(stats.binomtest(3, 4).pvalue)  # 3 vs 1 discordant on common items


def test_graded_scores_take_the_paired_t_test():
    rng = np.random.default_rng(0)
    x = rng.random(40)
    y = np.clip(x - 0.1 + 0.2 * rng.random(40), 0, 1)
    y[:3] = NAN
    t = pair_tests(np.array([x, y]))
    ref = stats.ttest_rel(x[3:], y[3:])
    assert not t.mcnemar[0, 1] and t.n_common[0, 1] == 37
    assert t.p[0, 1] == pytest.approx(ref.pvalue, rel=1e-9)
    lb = build_leaderboard(_matrix([x, y], unparsed=np.zeros((2, 40), bool)), n_boot=20)
    assert lb.pairs[0].test == "paired-t" and not lb.binary


def test_items_for_power_against_statsmodels():
    rng = np.random.default_rng(1)
    x = (rng.random(500) < 0.6).astype(float)
    y = np.where(rng.random(500) < 0.8, x, 1 - x)
    t = pair_tests(np.array([x, y]), alpha=0.05)
    d = x - y
    effect = abs(d.mean()) / d.std(ddof=1)
    n = NormalIndPower().solve_power(effect_size=effect, alpha=0.05, power=0.8, ratio=0)
    assert t.items_for_power[0, 1] == math.ceil(n)


def test_order_changes_list_the_pair_and_the_policy():
    # P: 6 right, 4 unparsed of 12 -> wrong 0.50, drop 0.75; Q: 7 right, no nulls -> 0.583 under all
    p = [1] * 6 + [NAN] * 4 + [0, 0]
    q = [1] * 7 + [0] * 5
    lb = build_leaderboard(_matrix([p, q], names=("P", "Q"), n_choices=4), n_boot=20)
    changes = {(c.a, c.b, c.policy) for c in lb.order_changes}
    # chance:4 gives P (6 + 1) / 12 = 0.5833 = Q: a tie, also a change of order
    assert changes == {("Q", "P", "drop"), ("Q", "P", "chance:4")}
    drop = next(c for c in lb.order_changes if c.policy == "drop")
    assert (drop.score_a, drop.score_b, drop.score_b_other) == pytest.approx((7 / 12, 6 / 12, 6 / 8))


def test_published_within_ci():
    lb = _board(published={"A": 0.90, "C": 0.60})
    by = {c.model: c for c in lb.published}
    assert by["A"].within_ci and not by["C"].within_ci
    assert by["C"].computed == pytest.approx(2 / 12)
    with pytest.raises(UsageError, match="'Z' is not on the leaderboard"):
        _board(published={"Z": 0.5})


def test_tier_letters_property_on_random_separations():
    rng = np.random.default_rng(7)
    for _ in range(200):
        m = int(rng.integers(2, 8))
        sep = np.triu(rng.random((m, m)) < 0.4, 1)
        sep = sep | sep.T
        letters = tier_letters(rng.random(m), sep)
        for i in range(m):
            assert letters[i]
            for j in range(i + 1, m):
                shares = bool(set(letters[i]) & set(letters[j]))
                assert shares == (not sep[i, j]), (sep, letters)


def test_competition_ranks_ties():
    assert competition_ranks(np.array([0.5, 0.7, 0.5, 0.1])).tolist() == [2, 1, 2, 4]


def test_resample_counts_keep_each_cluster_size():
    clusters = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 2])
    counts = resample_counts(10, clusters, 50, np.random.default_rng(0))
    assert counts.shape == (50, 10)
    for g, size in ((0, 3), (1, 2), (2, 5)):
        assert np.all(counts[:, clusters == g].sum(axis=1) == size)
    plain = resample_counts(10, None, 50, np.random.default_rng(0))
    assert np.all(plain.sum(axis=1) == 10)


def test_resampled_means_equal_the_means_of_the_drawn_items():
    rng = np.random.default_rng(2)
    s = (rng.random((4, 30)) < 0.5).astype(float)
    s[1, :5] = NAN
    counts = resample_counts(30, None, 10, rng)
    means = _resampled_means(counts.astype(np.float32), np.nan_to_num(s).astype(np.float32), (~np.isnan(s)) * 1.0)
    for b in range(10):
        drawn = np.repeat(np.arange(30), counts[b].astype(int))  # the resample's items, with repeats
        np.testing.assert_allclose(means[b], np.nanmean(s[:, drawn], axis=1), rtol=1e-6)


def test_bootstrap_ranks_are_seeded_and_a_clear_leader_is_first():
    rng = np.random.default_rng(4)
    s = np.stack([(rng.random(400) < p).astype(float) for p in (0.9, 0.5, 0.48)])
    r1 = bootstrap_ranks(s, n_boot=100, seed=5)
    assert np.array_equal(r1, bootstrap_ranks(s, n_boot=100, seed=5))
    assert np.all(r1[:, 0] == 1) and set(r1[:, 1]) <= {2, 3}
    lb = build_leaderboard(_matrix(list(s)), n_boot=100)
    assert (lb.models[0].rank_best, lb.models[0].rank_worst) == (1, 1)
    assert lb.models[1].rank_best == 2 and lb.models[2].rank_worst == 3


def test_split_half_tau_against_scipy_kendalltau():
    from expkit.stats.ranks import _kendall_tau_b

    rng = np.random.default_rng(5)
    x, y = rng.random((6, 7)), rng.random((6, 7))
    x[0, :3] = 0.5  # ties
    got = _kendall_tau_b(x, y)
    want = [stats.kendalltau(x[k], y[k]).statistic for k in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    s = np.stack([(rng.random(2000) < p).astype(float) for p in (0.9, 0.7, 0.5, 0.3, 0.1)])
    assert np.median(split_half_taus(s, n_splits=50)) == 1.0


def test_bad_options():
    with pytest.raises(UsageError, match="at least two"):
        build_leaderboard(_matrix([A]))
    with pytest.raises(UsageError, match=r"level=1\.5"):
        _board(level=1.5)
    with pytest.raises(UsageError, match="no scored item"):
        build_leaderboard(_matrix([[NAN, NAN, NAN], [1, 0, 1]]), policy=UnparsedPolicy("drop"))
