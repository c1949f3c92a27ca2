"""The finished seeds' finals judged as one more rung, the end (``EarlyStopPolicy.judge_finals``, issue 34)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from expkit.sweep.early_stop import END, EarlyStopPolicy, RungTable

# Config "b" is noisy at the rung (1.0, 3.0, 2.0 against a's 2.0, 2.1, 1.9) and tight at the end (finals 1.5,
# 1.7, 1.45 against a's 1.0, 1.1, 0.9: b - a = 0.5, 0.6, 0.55 on every seed).
RUNG = {"a": [2.0, 2.1, 1.9], "b": [1.0, 3.0, 2.0]}
FINAL = {"a": [1.0, 1.1, 0.9], "b": [1.5, 1.7, 1.45]}


def _table(**fields: object) -> tuple[RungTable, list[str]]:
    """Both configs' three seeds at rung 10, then a's seeds finished, then b's; the configs the finals stopped."""
    table = RungTable(EarlyStopPolicy(rungs=(10,), min_pairs=3, few_pairs="wait", **fields))  # type: ignore[arg-type]
    for config, values in RUNG.items():
        for seed, v in enumerate(values):
            assert not table.add(config, seed, 10, v).stop
    newly = []
    for config, finals in FINAL.items():
        for seed, v in enumerate(finals):
            newly += table.finish(config, seed, v)
    return table, newly


def test_a_config_whose_finals_are_worse_on_every_seed_is_stopped_at_the_end():
    table, newly = _table()
    assert newly == ["b"]
    d = table.stopped["b"]
    # paired t over 3 seeds: d = 0.5, 0.6, 0.55; mean 0.55, sd 0.05; t(0.975, 2) = 4.3027 (scipy.stats.t.ppf)
    # -> 0.55 +- 4.3027 * 0.05 / sqrt(3) = [0.4258, 0.6742]
    assert d.rung == END and d.leader == "a" and d.n_pairs == 3
    assert d.delta == pytest.approx(0.55, abs=1e-12)
    assert (d.low, d.high) == pytest.approx((0.4258, 0.6742), abs=1e-4)
    end = "the end (the finished seeds' final values)"
    assert table.policy.rung_text(d.rung) == table.policy.rung_text(None) == end


def test_without_judge_finals_the_same_seeds_are_judged_only_by_their_noisy_projection():
    # projected: b's seeds 1.0, 3.0, 2.0 minus b's mean gain 0.45 against a's 1.0, 1.1, 0.9: d = -0.45, 1.45,
    # 0.65, sd 0.95, so the interval (+- 2.36) includes 0
    table, newly = _table(judge_finals=False)
    assert newly == [] and table.stopped == {}


def test_a_tie_at_the_end_is_not_stopped():
    table = RungTable(EarlyStopPolicy(rungs=(10,), min_pairs=3, few_pairs="wait"))
    rung = {"a": RUNG["a"], "b": [2.2, 1.9, 2.0]}
    finals = {"a": FINAL["a"], "b": [1.05, 1.0, 0.95]}  # b - a = 0.05, -0.1, 0.05 at the end: no side
    for config, values in rung.items():
        for seed, v in enumerate(values):
            table.add(config, seed, 10, v)
    assert [c for config, vs in finals.items() for s, v in enumerate(vs) for c in table.finish(config, s, v)] == []
    assert set(table.finals) == {"a", "b"}  # both were judged at the end, neither stopped


def test_a_policy_written_before_judge_finals_reads_back_without_it_and_an_end_decision_survives_json():
    old = {k: v for k, v in dataclasses.asdict(EarlyStopPolicy(rungs=(10,))).items() if k != "judge_finals"}
    assert EarlyStopPolicy.from_record(old).judge_finals is False
    assert EarlyStopPolicy.from_record(dataclasses.asdict(EarlyStopPolicy(rungs=(10,)))).judge_finals is True
    from expkit.sweep.stopper import decision_record

    table, _ = _table()
    rec = json.loads(json.dumps(decision_record(table.stopped["b"], table.policy, stopped=True)))
    assert rec["rung"] is None and not math.isnan(rec["delta"])  # the end is not a finite rung: null in JSON
    assert "the end" in table.policy.rung_text(rec["rung"])


@pytest.mark.parametrize(("flag", "judged"), [(None, True), ("--no-finals", False), ("--finals", True)])
def test_the_finals_flag_reaches_the_recorded_policy(cli, tmp_path, monkeypatch, flag, judged):
    import sys

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s"
    args = ["--early-stop", "asha", "--rungs", "10", "--name", "g", "--seeds", "1", *([flag] if flag else [])]
    res = cli("sweep", "--store", str(store), "--grid", "x=1", *args, "--", sys.executable, "-c", "0")
    assert res.exit_code == 0, res.stderr
    assert json.loads((store / "groups" / "g.sweep.early_stop.json").read_text())["judge_finals"] is judged
