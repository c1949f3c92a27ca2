"""compare_groups: paired by seed or Welch, the seed spread, the verdict and the seeds it would need."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats as sps

from expkit.errors import UsageError
from expkit.runs.execute import ExecRequest, execute
from expkit.sweep.compare import MAX_SEEDS, compare_groups, curve_set_of, is_loss_like, seeds_needed

A = [1.0, 1.2, 0.9, 1.1, 1.0]
B_BETTER = [0.72, 0.88, 0.61, 0.79, 0.70]  # A - 0.3 with per-seed noise: paired d sd = 0.0158 (hand: ss = 0.001)
B_SAME = [1.05, 1.16, 0.93, 1.04, 1.04]  # A + (0.05, -0.04, 0.03, -0.06, 0.04): mean d = 0.004


def _record(store, group, seed, loss, **config):
    code = (
        f"import json; print(json.dumps({{'step': 1, 'loss': {loss + 0.5!r}}})); "
        f"print(json.dumps({{'step': 2, 'loss': {loss!r}, 'acc': {1 - loss!r}}}))"
    )
    # cwd: a directory outside any git checkout, so no code record is taken (fast)
    res = execute(
        ExecRequest([sys.executable, "-c", code], store=store, group=group, seed=seed, config=config, cwd=store)
    )
    assert res.status == "finished"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    for s, (a, b, same) in enumerate(zip(A, B_BETTER, B_SAME, strict=True)):
        _record(root, "base", s, a)
        _record(root, "better", s, b)
        _record(root, "same", s, same)
        _record(root, "other-seeds", 10 + s, b)
    return root


def test_shared_seeds_are_paired_and_match_a_paired_t_test(store):
    cmp = compare_groups("base", "better", store=store, metrics=("loss",))
    (m,) = cmp.metrics
    assert m.method == "paired" and m.n_a == m.n_b == 5
    d = np.array(B_BETTER) - np.array(A)
    low, high = sps.t.interval(0.95, 4, loc=d.mean(), scale=sps.sem(d))  # scipy: the paired t interval
    assert (m.delta, m.low, m.high) == pytest.approx((d.mean(), low, high), rel=1e-12)
    assert m.p_value == pytest.approx(sps.ttest_rel(B_BETTER, A).pvalue, rel=1e-9)
    assert m.lower_is_better and "loss-like" in m.direction_source
    assert m.verdict == "better"  # loss fell by 0.30 [0.28, 0.32]
    assert m.noise_floor == pytest.approx((high - low) / 2)
    assert "paired by seed" in cmp.notes[0]


def test_different_seeds_fall_back_to_welch(store):
    (m,) = compare_groups("base", "other-seeds", store=store, metrics=("loss",)).metrics
    assert m.method == "welch"
    res = sps.ttest_ind(B_BETTER, A, equal_var=False)
    assert m.p_value == pytest.approx(res.pvalue, rel=1e-9)
    low, high = res.confidence_interval(0.95)
    assert (m.low, m.high) == pytest.approx((low, high), rel=1e-9)
    # hand: pooled within-side sd from the two sample variances 0.013 and 0.01025
    assert m.seed_sd == pytest.approx(np.sqrt((0.013 + 0.01025) / 2), rel=1e-9)


def test_direction_flips_the_verdict(store):
    (loss,) = compare_groups("base", "better", store=store, metrics=("loss",), lower_is_better=False).metrics
    assert loss.verdict == "worse" and loss.direction_source == "as given"
    (acc,) = compare_groups("base", "better", store=store, metrics=("acc",)).metrics
    assert not acc.lower_is_better and acc.verdict == "better"  # acc = 1 - loss rose


def test_a_difference_inside_the_noise_says_how_many_seeds(store):
    (m,) = compare_groups("base", "same", store=store, metrics=("loss",)).metrics
    assert m.low < 0 < m.high
    sd_d = float(np.std(np.array(B_SAME) - np.array(A), ddof=1))
    n = seeds_needed(m.delta, sd_d, paired=True)
    assert m.verdict == f"inconclusive (need ~{n} seeds)" and n > 100


def test_seeds_needed_matches_r_power_t_test():
    # R: power.t.test(delta=1, sd=1, power=.8)$n = 16.71477; type="paired": 9.93785 (rounded up)
    assert seeds_needed(1.0, 1.0, paired=False) == 17
    assert seeds_needed(1.0, 1.0, paired=True) == 10
    assert seeds_needed(0.0, 1.0, paired=True) is None
    # delta=.5: n = 63.77; delta=.1: 1570.7, paired 786.8; delta=.03 needs ~17,400, past the cap
    assert seeds_needed(0.5, 1.0, paired=False) == 64
    assert seeds_needed(0.1, 1.0, paired=False) == 1571
    assert seeds_needed(0.1, 1.0, paired=True) == 787
    assert seeds_needed(0.03, 1.0, paired=False) == MAX_SEEDS + 1


def test_split_one_sweep_by_a_config_key(tmp_path):
    for s, (a, b) in enumerate(zip(A, B_BETTER, strict=True)):
        _record(tmp_path, "sw", s, a, lr=0.001)
        _record(tmp_path, "sw", s, b, lr=0.003)
    cmp = compare_groups("sw", by="lr", store=tmp_path, metrics=("loss",))
    assert (cmp.a.label, cmp.b.label) == ("lr=0.001", "lr=0.003")
    assert cmp.metrics[0].method == "paired" and cmp.metrics[0].verdict == "better"
    cs = curve_set_of(cmp, metric="loss")
    assert [b.group for b in cs.bands] == ["lr=0.001", "lr=0.003"]
    _record(tmp_path, "sw", 0, 1.0, lr=0.01)
    with pytest.raises(UsageError, match="3 values"):
        compare_groups("sw", by="lr", store=tmp_path)


def test_bad_requests_name_what_is_wrong(store):
    with pytest.raises(UsageError, match="no finished runs"):
        compare_groups("base", "nope", store=store)
    with pytest.raises(UsageError, match="'val_loss' is not a final metric"):
        compare_groups("base", "better", store=store, metrics=("val_loss",))
    with pytest.raises(UsageError, match="no config key 'lr'"):
        compare_groups("base", by="lr", store=store)


@pytest.mark.parametrize(
    ("name", "lower"),
    [
        ("loss", True),
        ("val_loss", True),
        ("error_rate", True),
        ("ppl", True),
        ("elapsed_s", True),
        ("acc", False),
        ("f1", False),
    ],
)
def test_loss_like_names(name, lower):
    assert is_loss_like(name) is lower


def test_the_trial_config_survives_a_command_that_records_its_own():
    from expkit.runs.runrecord import RunRecord
    from expkit.sweep.compare import _config_of

    # expkit train charlm attaches to its run and replaces `config` with its own nested one
    rec = RunRecord(
        id="r1",
        status="finished",
        config={"train": {"lr_max": 0.003}},
        extra={"sweep": {"config": {"lr_max": 0.003}}},
    )
    assert _config_of(rec)["lr_max"] == 0.003 and "train" in _config_of(rec)


def _record_metrics(store, group, seed, lr, **metrics):
    line = {"step": 1, **metrics}
    code = f"import json; print(json.dumps({line!r}))"
    res = execute(
        ExecRequest([sys.executable, "-c", code], store=store, group=group, seed=seed, config={"lr": lr}, cwd=store)
    )
    assert res.status == "finished"


def test_seeds_without_effect_give_no_verdict(tmp_path):
    # the command ignores its seed: every seed of a config ends at the same loss (the case: a
    # zero-width interval that used to be called "better")
    for s in range(3):
        _record_metrics(tmp_path, "noseed", s, 0.1, loss=0.9626)
        _record_metrics(tmp_path, "noseed", s, 0.2, loss=0.92518)
    cmp = compare_groups("noseed", by="lr", store=tmp_path)
    (m,) = cmp.metrics
    assert m.verdict == "no verdict: the seeds had no effect" and not m.judged and m.seeds_needed is None
    assert any("seeds had no effect" in n and "lr=0.1 and of lr=0.2" in n for n in cmp.notes)


def test_seeds_that_move_the_metric_are_judged(tmp_path):
    # contrary measurement: the same means with seed-to-seed spread on one side flips to a verdict again
    for s, noise in enumerate((-0.001, 0.0, 0.001)):
        _record_metrics(tmp_path, "seeded", s, 0.1, loss=0.9626 + noise)
        _record_metrics(tmp_path, "seeded", s, 0.2, loss=0.92518 + noise + 0.0001 * s)
    (m,) = compare_groups("seeded", by="lr", store=tmp_path).metrics
    assert m.judged and m.verdict == "better"


def test_only_objective_metrics_are_judged_by_default(tmp_path):
    for s in range(3):
        _record_metrics(tmp_path, "obj", s, 0.1, loss=1.0 + 0.01 * s, lr_now=0.1, grad_norm=2.0 + 0.1 * s)
        _record_metrics(tmp_path, "obj", s, 0.2, loss=0.5 + 0.012 * s, lr_now=0.2, grad_norm=3.0 + 0.1 * s)
    cmp = compare_groups("obj", by="lr", store=tmp_path)
    by_name = {m.metric: m for m in cmp.metrics}
    assert [m.metric for m in cmp.metrics] == ["loss", "grad_norm", "lr_now"]  # judged first, then listed
    assert by_name["loss"].judged and by_name["loss"].verdict == "better"
    for name in ("grad_norm", "lr_now"):
        assert not by_name[name].judged and by_name[name].verdict.startswith("not judged")
    # naming a metric judges it, objective or not
    (g,) = compare_groups("obj", by="lr", store=tmp_path, metrics=("grad_norm",)).metrics
    assert g.judged and g.verdict in ("better", "worse")


@pytest.mark.parametrize(
    ("name", "objective"),
    [
        ("val_loss", True),
        ("accuracy", True),
        ("reward_mean", True),
        ("perplexity", True),
        ("eval/f1", True),
        ("lr", False),
        ("grad_norm", False),
        ("tokens_per_s", False),
        ("learning_rate", False),
    ],
)
def test_objective_like_names(name, objective):
    from expkit.sweep.compare import is_objective_like

    assert is_objective_like(name) is objective
