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
