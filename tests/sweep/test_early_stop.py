"""Seed-aware early stopping: the rule at a rung (seed-paired interval vs the leader), and its replay."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from expkit.errors import UsageError
from expkit.sweep.early_stop import (
    EarlyStopPolicy,
    RecordedGrid,
    decide_at_rung,
    full_grid_verdict,
    replay_point_asha,
    replay_seed_aware,
)

POLICY = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="wait")  # the paired rule alone


def test_a_config_whose_paired_interval_excludes_it_is_stopped_with_the_interval():
    v = {"lead": {0: 1.0, 1: 1.2, 2: 0.9}, "bad": {0: 1.5, 1: 1.6, 2: 1.45}}
    d = decide_at_rung(v, "bad", rung=10, policy=POLICY)
    diffs = np.array([0.5, 0.4, 0.55])
    low, high = sps.t.interval(0.95, 2, loc=diffs.mean(), scale=sps.sem(diffs))  # scipy: paired t interval
    assert d.stop and d.leader == "lead" and d.n_pairs == 3
    assert (d.delta, d.low, d.high) == pytest.approx((diffs.mean(), low, high), rel=1e-12)


def test_one_seed_worse_than_the_leader_is_not_enough():
    # contrary measurement: the same mean gap with seed-to-seed spread that crosses 0 keeps the config
    v = {"lead": {0: 1.0, 1: 1.2, 2: 0.9}, "noisy": {0: 2.4, 1: 0.8, 2: 0.75}}
    d = decide_at_rung(v, "noisy", rung=10, policy=POLICY)
    assert not d.stop and d.low < 0 < d.high
    # and too few paired seeds never stop, however far behind the one seed is
    far = {"lead": {0: 1.0, 1: 1.2, 2: 0.9}, "far": {0: 100.0, 1: 100.0}}
    assert not decide_at_rung(far, "far", rung=10, policy=POLICY).stop


def test_higher_is_better_flips_the_side():
    v = {"lead": {0: 0.9, 1: 0.92, 2: 0.91}, "low": {0: 0.5, 1: 0.52, 2: 0.49}}
    hib = EarlyStopPolicy(catch_up=False, rungs=(10,), lower_is_better=False)
    assert decide_at_rung(v, "low", rung=10, policy=hib).stop
    assert decide_at_rung(v, "lead", rung=10, policy=POLICY).stop  # lower is better: "lead" is the worse one


@pytest.mark.parametrize("rungs", [(), (0, 10), (20, 10)])
def test_bad_rungs_are_refused(rungs):
    with pytest.raises(UsageError, match="rungs"):
        EarlyStopPolicy(catch_up=False, rungs=rungs)


@pytest.mark.parametrize("text", ["nan", "inf", "10,nan", "nans", "5s,infs"])
def test_rungs_that_are_not_finite_are_refused(text):
    # nan/inf in steps were a ValueError/OverflowError traceback from int(); in seconds a rung never reached
    with pytest.raises(UsageError, match="finite"):
        EarlyStopPolicy.from_text(text)


def _grid() -> RecordedGrid:
    # three configs x 5 seeds, curves at steps 10, 20, 40; "good" is best by a wide margin over seeds
    rng = np.random.default_rng(0)
    level = {"good": 0.2, "mid": 0.6, "bad": 1.5}
    curves = {}
    for c, base in level.items():
        for s in range(5):
            noise = 0.02 * rng.normal()
            curves[(c, s)] = [base + 1.0 + noise, base + 0.5 + noise, base + noise]
    return RecordedGrid(("good", "mid", "bad"), tuple(range(5)), (10, 20, 40), curves)


def test_replay_stops_clear_losers_and_keeps_the_verdict():
    grid = _grid()
    best, ties = full_grid_verdict(grid)
    assert best == "good" and ties == {"good"}
    trials = [(c, s) for s in range(5) for c in grid.configs]  # seeds arrive round-robin
    out = replay_seed_aware(grid, EarlyStopPolicy(catch_up=False, rungs=(10, 20)), order=trials, ties=ties)
    # seeds 0 and 1 of every config run to the end (6 x 40, no config has 3 seeds yet); seed 2: good, the
    # leader, runs 40; mid and bad have 3 pairs at step 10 and stop there (2 x 10); seeds 3, 4 of mid and bad
    # never start, good's run 40 each: 240 + 40 + 20 + 80 = 380 of 15 x 40 = 600 steps
    assert out.picked == "good" and out.agrees and out.stopped == ("bad", "mid")
    assert out.compute_fraction == pytest.approx(380 / 600)


def test_replay_with_every_trial_at_once_judges_all_seeds_at_the_first_rung():
    grid = _grid()
    _, ties = full_grid_verdict(grid)
    trials = [(c, s) for s in range(5) for c in grid.configs]
    out = replay_seed_aware(grid, EarlyStopPolicy(catch_up=False, rungs=(10, 20)), order=trials, ties=ties, workers=15)
    # all 15 trials reach step 10 together; good has 3 seeds there by its seed 2, so mid and bad stop at their
    # seed 2's value and their other running seeds end with them: 15 x 10 steps, then good's 5 seeds x 30
    assert out.stopped == ("bad", "mid") and out.picked == "good"
    assert out.compute_fraction == pytest.approx((15 * 10 + 5 * 30) / 600)
    one_at_a_time = replay_seed_aware(
        grid, EarlyStopPolicy(catch_up=False, rungs=(10, 20)), order=trials, ties=ties, workers=1
    )
    assert one_at_a_time.compute_fraction == pytest.approx(380 / 600)  # the sequential count above


def test_point_asha_counts_its_steps_and_can_pick_the_wrong_config():
    grid = _grid()
    _, ties = full_grid_verdict(grid)
    # "bad" arrives first everywhere: with eta 2, the first value at a rung always goes on
    order = [("bad", 0), ("good", 0), ("mid", 0)]
    out = replay_point_asha(grid, (10, 20), eta=2, order=order, ties=ties)
    # bad: 40 steps; good: its value is the best so far, 40 steps; mid at rung 10: ceil(3/2) = 2 kept, it is 2nd,
    # goes on; at rung 20 it is again 2nd of 3: 40 steps
    assert out.compute_fraction == pytest.approx(120 / 600) and out.picked == "good"
    lone = replay_point_asha(grid, (10, 20), eta=2, order=[("bad", 0)], ties=ties)
    assert lone.picked == "bad" and not lone.agrees


def test_pooled_spread_judges_a_config_with_one_seed_by_the_spread_of_the_others():
    # "far" has one seed; the spread pooled over "lead" (3 seeds) and "mid" (2 seeds): df = 2 + 1 = 3
    v = {"lead": {0: 1.0, 1: 1.2, 2: 0.9}, "mid": {0: 1.1, 1: 1.3}, "far": {0: 2.0}}
    pooled = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="pooled-spread")
    d = decide_at_rung(v, "far", rung=10, policy=pooled)
    lead, mid = np.array([1.0, 1.2, 0.9]), np.array([1.1, 1.3])
    sd = np.sqrt((((lead - lead.mean()) ** 2).sum() + ((mid - mid.mean()) ** 2).sum()) / 3)
    delta = 2.0 - lead.mean()
    half = sps.t.ppf(0.975, 3) * sd * np.sqrt(1 / 1 + 1 / 3)  # scipy: pooled-variance t, by hand
    assert d.stop and d.leader == "lead" and d.n_pairs == 0 and "pooled" in d.reason
    assert (d.delta, d.low, d.high) == pytest.approx((delta, delta - half, delta + half), rel=1e-12)
    # the same one seed, closer than the pooled spread resolves: kept
    near = {**v, "far": {0: 1.3}}
    assert not decide_at_rung(near, "far", rung=10, policy=pooled).stop
    # paired only (few_pairs wait), one seed is never enough
    assert not decide_at_rung(v, "far", rung=10, policy=POLICY).stop


def test_log_scale_judges_ratios_and_leaves_values_it_cannot_log_unjudged():
    from expkit.sweep.early_stop import RungTable

    table = RungTable(EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=2, log_scale=True))
    for s, x in enumerate([1.0, 1.1]):
        table.add("lead", s, 10, x)
    d0 = table.add("bad", 0, 10, 3.0)
    d = table.add("bad", 1, 10, 3.3)
    # log ratios: log(3/1) and log(3.3/1.1) are both log 3: a zero-width paired interval at log 3
    assert not d0.stop and d.stop and d.delta == pytest.approx(np.log(3.0)) and d.low == pytest.approx(np.log(3.0))
    assert table.values[10]["bad"] == {0: pytest.approx(np.log(3.0)), 1: pytest.approx(np.log(3.3))}
    bad = table.add("zero", 0, 10, 0.0)
    assert not bad.stop and "log scale" in bad.reason and "zero" not in table.values[10]


# the paired rule with the variance of the paired differences pooled over configs (seeds the blocks of a
# randomized complete block design): "lead" has 4 seeds, "x" 3 and "y" 2 of them, "one" a single seed
BLOCKS = {
    "lead": {0: 1.0, 1: 1.3, 2: 0.8, 3: 1.1},
    "x": {0: 1.2, 1: 1.45, 2: 1.05},
    "y": {1: 1.5, 3: 1.2},
    "one": {2: 1.4},
}
PAIRED_POOLED = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="pooled-pairs", min_pooled_df=3)


def _pooled_by_hand(values, config, level=0.95):
    # by hand: d = config - lead per common seed; s^2 = sum((n_X - 1) var_X(d)) / sum(n_X - 1) over every
    # config X != lead with >= 2 common seeds (numpy's ddof=1 variances, weighted; not the module's loop)
    lead = values["lead"]
    diffs = {
        c: np.array([v[s] - lead[s] for s in sorted(set(v) & set(lead))]) for c, v in values.items() if c != "lead"
    }
    pooled = [d for d in diffs.values() if d.size >= 2]
    df = sum(d.size - 1 for d in pooled)
    s2 = sum((d.size - 1) * np.var(d, ddof=1) for d in pooled) / df
    mine = diffs[config]
    half = sps.t.ppf(0.5 + level / 2, df) * np.sqrt(s2 / mine.size)
    return df, mine.mean(), mine.mean() - half, mine.mean() + half


def test_paired_pooled_interval_matches_a_hand_computation():
    df, delta, low, high = _pooled_by_hand(BLOCKS, "one")
    assert df == 3  # x: 3 pairs (2 df), y: 2 pairs (1 df); "one" has a single pair: no df of its own
    d = decide_at_rung(BLOCKS, "one", rung=10, policy=PAIRED_POOLED)
    assert d.leader == "lead" and d.n_pairs == 1 and d.stop and low > 0
    assert (d.delta, d.low, d.high) == pytest.approx((delta, low, high), rel=1e-12)
    assert "pooled over 3 df" in d.reason
    # "y" has 2 pairs (< min_pairs 3): judged the same way, its own 2 pairs inside the pool
    _, delta_y, low_y, high_y = _pooled_by_hand(BLOCKS, "y")
    dy = decide_at_rung(BLOCKS, "y", rung=10, policy=PAIRED_POOLED)
    assert dy.n_pairs == 2 and (dy.delta, dy.low, dy.high) == pytest.approx((delta_y, low_y, high_y), rel=1e-12)
    # "x" has 3 pairs: its own paired t interval (2 df), as without pooling
    plain = decide_at_rung(BLOCKS, "x", rung=10, policy=EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3))
    dx = decide_at_rung(BLOCKS, "x", rung=10, policy=PAIRED_POOLED)
    assert (dx.delta, dx.low, dx.high, dx.stop) == (plain.delta, plain.low, plain.high, plain.stop)


def test_a_config_with_one_seed_is_judged_only_when_the_pooled_df_suffice():
    assert decide_at_rung(BLOCKS, "one", rung=10, policy=PAIRED_POOLED).stop  # 3 df >= 3
    four = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="pooled-pairs")  # the default: >= 4 df
    d = decide_at_rung(BLOCKS, "one", rung=10, policy=four)
    assert not d.stop and d.delta is None and d.n_pairs == 1 and "3 df < 4" in d.reason
    # y's second seed gone: 2 df < 3, the same one seed is not judged
    fewer = {**BLOCKS, "y": {1: 1.5}}
    assert not decide_at_rung(fewer, "one", rung=10, policy=PAIRED_POOLED).stop
    # a seed the leader has not reached is no pair: nothing to judge (the unpaired pooled rule would judge it)
    unpaired = {**BLOCKS, "one": {4: 5.0}}
    d = decide_at_rung(unpaired, "one", rung=10, policy=PAIRED_POOLED)
    assert not d.stop and d.n_pairs == 0
    assert decide_at_rung(
        unpaired, "one", rung=10, policy=EarlyStopPolicy(catch_up=False, rungs=(10,), few_pairs="pooled-spread")
    ).stop


# little seed-to-seed spread: the seed-effect tests shift every config's seed s by one offset b_s
FLAT = {
    "lead": {0: 1.0, 1: 1.02, 2: 0.99, 3: 1.01},
    "x": {0: 1.1, 1: 1.13, 2: 1.09},
    "y": {1: 1.15, 3: 1.12},
    "one": {2: 1.3},
}


def _shifted(values: dict[str, dict[int, float]], b: dict[int, float]) -> dict[str, dict[int, float]]:
    return {c: {s: x + b[s] for s, x in v.items()} for c, v in values.items()}


def test_seed_effects_shared_with_the_leader_cancel_in_the_paired_pooled_rule():
    # little seed-to-seed spread; then every config's seed s shifted by the same offset b_s (a seed effect,
    # shared with the leader): the paired differences, and so the decisions, are exactly what they were; the
    # unpaired pooled-spread rule reads the offsets as seed-to-seed spread and no longer stops "one"
    flat = FLAT
    shifted = _shifted(flat, {0: 0.0, 1: 0.9, 2: -0.7, 3: 0.4})
    for config in ("one", "y", "x"):
        d0 = decide_at_rung(flat, config, rung=10, policy=PAIRED_POOLED)
        d1 = decide_at_rung(shifted, config, rung=10, policy=PAIRED_POOLED)
        assert d1.stop == d0.stop and d1.leader == d0.leader == "lead" and d1.reason == d0.reason
        assert (d1.delta, d1.low, d1.high) == pytest.approx((d0.delta, d0.low, d0.high), abs=1e-12)
    assert decide_at_rung(shifted, "one", rung=10, policy=PAIRED_POOLED).stop
    spread = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="pooled-spread")
    assert decide_at_rung(flat, "one", rung=10, policy=spread).stop
    assert not decide_at_rung(shifted, "one", rung=10, policy=spread).stop


# the randomized complete block analysis (few_pairs "rcbd"): the additive config + seed fit over every cell at
# the rung gives the residual variance; d over the seeds shared with the leader, se sqrt(2 s^2 / n)
RCBD = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="rcbd", min_pooled_df=3)


def test_rcbd_interval_matches_the_closed_form_of_a_balanced_block_design():
    # 4 configs x 4 seeds, every cell: SS_res = sum (y_cs - ybar_c. - ybar_.s + ybar..)^2, df = (C-1)(S-1) = 9
    y = np.array(
        [
            [1.00, 1.30, 0.80, 1.10],  # lead
            [1.20, 1.45, 1.05, 1.25],  # b
            [1.02, 1.40, 0.78, 1.12],  # c
            [2.00, 2.40, 1.70, 2.10],  # d
        ]
    )
    names = ["lead", "b", "c", "d"]
    values = {c: {s: float(y[i, s]) for s in range(4)} for i, c in enumerate(names)}
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    df = 3 * 3
    s2 = float((resid**2).sum()) / df
    four = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="rcbd")  # min_pooled_df 4 <= 9
    for i, c in enumerate(names[1:], 1):
        d = y[i] - y[0]
        half = sps.t.ppf(0.975, df) * np.sqrt(2 * s2 / 4)
        got = decide_at_rung(values, c, rung=10, policy=four)
        assert got.leader == "lead" and got.n_pairs == 4 and "over 9 df" in got.reason
        assert (got.delta, got.low, got.high) == pytest.approx((d.mean(), d.mean() - half, d.mean() + half), rel=1e-10)
        assert got.stop == (d.mean() - half > 0)
    # b (0.19 behind) and d are excluded; c's gap (0.03) is inside the interval (half width 0.089): kept
    assert [decide_at_rung(values, c, rung=10, policy=four).stop for c in ("b", "c", "d")] == [True, False, True]


def _backfit(values, sweeps=5000):
    # an independent two-way additive fit of the cells present: alternate config and seed means of the
    # residuals until they stop moving (Gauss-Seidel on the normal equations), then residual SS
    cells = [(c, s, x) for c, v in values.items() for s, x in v.items()]
    a = {c: 0.0 for c in values}
    b = {s: 0.0 for _, s, _ in cells}
    mu = np.mean([x for *_, x in cells])
    for _ in range(sweeps):
        for c in a:
            a[c] = np.mean([x - mu - b[s] for cc, s, x in cells if cc == c])
        for s in b:
            b[s] = np.mean([x - mu - a[c] for c, ss, x in cells if ss == s])
    ss = sum((x - mu - a[c] - b[s]) ** 2 for c, s, x in cells)
    return ss, a


def test_rcbd_on_unbalanced_cells_matches_an_independent_fit_and_judges_one_seed():
    # BLOCKS: 10 cells, 4 configs, 4 seeds, connected: df = 10 - 4 - 4 + 1 = 3
    ss, effect = _backfit(BLOCKS)
    s2, df = ss / 3, 3
    assert min(("lead", "x", "y"), key=effect.get) == "lead"
    for config in ("one", "y", "x"):
        common = sorted(set(BLOCKS[config]) & set(BLOCKS["lead"]))
        d = np.mean([BLOCKS[config][s] - BLOCKS["lead"][s] for s in common])
        half = sps.t.ppf(0.975, df) * np.sqrt(2 * s2 / len(common))
        got = decide_at_rung(BLOCKS, config, rung=10, policy=RCBD)
        assert got.leader == "lead" and got.n_pairs == len(common)
        assert (got.delta, got.low, got.high) == pytest.approx((d, d - half, d + half), rel=1e-8)
    # one seed paired with the leader is judged once the residual df suffice, and here it is excluded
    assert decide_at_rung(BLOCKS, "one", rung=10, policy=RCBD).stop


def test_rcbd_needs_min_pooled_df_residual_df_else_waits_for_min_pairs():
    four = EarlyStopPolicy(
        catch_up=False, rungs=(10,), min_pairs=3, few_pairs="rcbd"
    )  # min_pooled_df 4; BLOCKS has 3 df
    d = decide_at_rung(BLOCKS, "one", rung=10, policy=four)
    assert not d.stop and d.delta is None and "1 paired seeds < 3" in d.reason
    # x has 3 pairs: below the df threshold it is the paired t interval alone, as with few_pairs wait
    wait = EarlyStopPolicy(catch_up=False, rungs=(10,), min_pairs=3, few_pairs="wait")
    assert decide_at_rung(BLOCKS, "x", rung=10, policy=four) == decide_at_rung(BLOCKS, "x", rung=10, policy=wait)
    # one more cell (y's seed 0): 11 cells, df 4: the same single seed is now judged
    more = {**BLOCKS, "y": {**BLOCKS["y"], 0: 1.3}}
    d = decide_at_rung(more, "one", rung=10, policy=four)
    assert d.stop and d.n_pairs == 1 and "over 4 df" in d.reason
    # without any pair with the leader there is nothing to judge
    assert not decide_at_rung({**BLOCKS, "one": {4: 9.0}}, "one", rung=10, policy=RCBD).stop


def test_seed_effects_cancel_in_the_rcbd_rule_and_the_leader_is_seed_adjusted():
    # per-seed offsets added to every config leave the residuals, the paired differences and the leader alone.
    # "y" has only seeds 1 and 3: with the offsets its raw mean is the best at the rung, but its seed-adjusted
    # effect is not (a rule choosing the leader by raw means would change leader, and decisions, here)
    flat = {**FLAT, "z": {0: 1.2, 2: 1.22}}
    shifted = _shifted(flat, {0: 0.9, 1: -0.7, 2: 0.8, 3: -0.6})
    assert min(shifted, key=lambda c: np.mean(list(shifted[c].values()))) == "y"
    for config in flat:
        d0 = decide_at_rung(flat, config, rung=10, policy=RCBD)
        d1 = decide_at_rung(shifted, config, rung=10, policy=RCBD)
        assert d1.stop == d0.stop and d1.leader == d0.leader == "lead" and d1.reason == d0.reason
        assert (d1.delta, d1.low, d1.high) == pytest.approx((d0.delta, d0.low, d0.high), abs=1e-9)
    assert decide_at_rung(shifted, "one", rung=10, policy=RCBD).stop


def test_an_unknown_few_pairs_rule_is_refused_by_name():
    with pytest.raises(UsageError, match="few_pairs 'pooled'"):
        EarlyStopPolicy(catch_up=False, rungs=(10,), few_pairs="pooled")
    with pytest.raises(UsageError, match="min_pooled_df"):
        EarlyStopPolicy(catch_up=False, rungs=(10,), few_pairs="pooled-pairs", min_pooled_df=0)


@pytest.mark.parametrize(
    ("test", "fields"),
    [
        (None, {"few_pairs": "pooled-pairs", "log_scale": True, "catch_up": True, "judge_finals": True}),  # default
        ("paired-pooled", {"few_pairs": "pooled-pairs", "log_scale": False}),
        ("paired-pooled-log", {"few_pairs": "pooled-pairs", "log_scale": True}),
        ("pooled", {"few_pairs": "pooled-spread", "log_scale": False}),
        ("pooled-log", {"few_pairs": "pooled-spread", "log_scale": True}),
        ("paired", {"few_pairs": "wait", "log_scale": False}),
        ("paired-rcbd", {"few_pairs": "rcbd", "log_scale": False}),
        ("paired-rcbd-log", {"few_pairs": "rcbd", "log_scale": True}),
    ],
)
def test_stop_test_choices_map_to_the_policy(cli, tmp_path, monkeypatch, test, fields):
    import json
    import sys

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s"
    args = ["--early-stop", "asha", "--rungs", "10", "--name", "g", "--seeds", "1"]
    args += ["--stop-test", test] if test else []
    res = cli("sweep", "--store", str(store), "--grid", "x=1", *args, "--", sys.executable, "-c", "0")
    assert res.exit_code == 0, res.stderr
    saved = json.loads((store / "groups" / "g.sweep.early_stop.json").read_text())
    assert {k: saved[k] for k in fields} == fields


def test_a_policy_written_before_few_pairs_reads_back_as_the_rule_it_was():
    """A sweep recorded by an expkit before ``few_pairs`` is resumed with the rule it ran: no pool flag meant
    the paired rule alone then (the default has since become pooled-pairs)."""
    import dataclasses

    old = {k: v for k, v in dataclasses.asdict(POLICY).items() if k != "few_pairs"}
    assert EarlyStopPolicy.from_record({**old, "pool_spread": False}).few_pairs == "wait"
    assert EarlyStopPolicy.from_record({**old, "pool_spread": True, "log_scale": True}).few_pairs == "pooled-spread"
    assert EarlyStopPolicy.from_record({**old, "pool_spread": False, "pool_pairs": True}).few_pairs == "pooled-pairs"
    now = EarlyStopPolicy(catch_up=False, rungs=(10, 20), min_pairs=2)
    assert EarlyStopPolicy.from_record(dataclasses.asdict(now)) == now
