"""``--early-stop asha`` in a real sweep: trials print a curve as metrics lines (``expkit runs exec`` records
them in the run's ``metrics.jsonl``, which the driver reads as they come); the config that is
clearly worse is stopped at a rung with the decision in its runs' records, the two that tie both finish, and
``compare`` leaves the stopped config out and says so."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from expkit.runs.metrics import iter_metric_records
from expkit.runs.store import list_runs, read_record
from expkit.sweep import SweepRequest, compare_groups, plan_sweep, run_sweep
from expkit.sweep.backends import BackendSettings
from expkit.sweep.early_stop import EarlyStopPolicy

STEPS = 40
# loss = base + 1/step + pattern[seed]: "a" and "b" differ by +0.02, -0.02, 0 over seeds 0, 1, 2 (mean 0: any
# two or three of those paired seeds give an interval around 0: a tie); "c" is a + 1 + 0.01 * seed (worse
# by ~1 on every seed: two paired seeds already exclude 0 at a t interval with 1 degree of freedom)
CURVE = textwrap.dedent(
    f"""
    import json, os, time
    config = os.environ["EXPKIT_CONFIG_CFG"]
    seed = int(os.environ["EXPKIT_SEED"])
    a = [0.0, 0.1, 0.2][seed]
    offset = {{"a": a, "b": a + [0.02, -0.02, 0.0][seed], "c": a + 1.0 + 0.01 * seed}}[config]
    for step in range(1, {STEPS} + 1):
        print(json.dumps({{"step": step, "loss": 1.0 + offset + 1.0 / step}}), flush=True)
        time.sleep(0.03)
    """
)


@pytest.fixture(autouse=True)
def _outside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _last_step(run_dir: Path) -> int:
    steps = [rec["step"] for _, rec in iter_metric_records(run_dir) if type(rec.get("step")) is int]
    return max(steps, default=0)


@pytest.mark.parametrize(
    "rule",
    [{"min_pairs": 2, "few_pairs": "wait"}, {"min_pairs": 2, "few_pairs": "pooled-spread", "log_scale": True}],
    ids=["paired", "pooled-log"],
)
def test_the_clearly_worse_config_is_stopped_at_a_rung_and_the_tie_runs_to_the_end(tmp_path, rule):
    (tmp_path / "curve.py").write_text(CURVE)
    store = tmp_path / "store"
    plan = plan_sweep([sys.executable, str(tmp_path / "curve.py")], group="es", grid=["cfg=a,b,c"], seeds=3)
    # the rungs alone: with the finals rung a load that lets two of c's seeds end before a rung decision lands
    # stops c at the end instead (tests/sweep/test_early_stop_finals.py)
    policy = EarlyStopPolicy(catch_up=False, judge_finals=False, rungs=(5, 20), **rule)
    res = run_sweep(
        SweepRequest(plan, store=store, settings=BackendSettings(max_parallel=2), early_stop=policy, max_retries=0)
    )
    by_cfg: dict[str, list] = {}
    for o in res.outcomes:
        by_cfg.setdefault(o.config["cfg"], []).append(o)
    assert res.complete and not res.cancelled
    # the tie: both configs ran every seed to the end, and no run of theirs carries a stop
    for cfg in ("a", "b"):
        assert [o.status for o in by_cfg[cfg]] == ["finished"] * 3
        for o in by_cfg[cfg]:
            assert "early_stop" not in read_record(store / o.run_id).extra
            assert _last_step(store / o.run_id) == STEPS
    # the bad config: stopped, with the decision and its interval; not every seed ran to the end
    assert res.early_stop is not None and [d.config for d in res.early_stop.stopped] == ["cfg=c"]
    decision = res.early_stop.stopped[0]
    assert decision.rung in (5, 20) and decision.leader in ("cfg=a", "cfg=b")
    assert 0 < decision.low <= decision.delta <= decision.high
    if policy.log_scale:  # log(c / a) at step 5: log((2.2 + offset) / (1.2 + offset)), offset in [0, 0.2]
        assert np.log(2.4 / 1.4) - 0.05 < decision.delta < np.log(2.2 / 1.2) + 0.05
    else:  # c - a = 1 + 0.01 * seed, over >= 2 paired seeds
        assert decision.n_pairs >= 2 and decision.delta == pytest.approx(1.0, abs=0.1)
    statuses = [o.status for o in by_cfg["c"]]
    assert "stopped" in statuses and set(statuses) <= {"stopped", "finished"}
    c_runs = [r for r in list_runs(store, where=["group=es", "config.cfg=c"]).runs]
    assert c_runs and {r.status for r in c_runs} <= {"stopped", "finished"}
    for r in c_runs:
        rec = read_record(store / r.id)
        stop = rec.extra["early_stop"]
        assert stop["config"] == "cfg=c" and stop["stop"] and stop["low"] > 0 and stop["rung"] == decision.rung
        assert stop["config_stopped"] == (rec.status == "stopped")
        if rec.status == "stopped":
            assert "stopped early at rung" in rec.status_reason and _last_step(store / r.id) < STEPS
    steps_c = sum(_last_step(store / r.id) for r in c_runs)
    assert steps_c < 3 * STEPS  # compute was saved on the stopped config
    # compare: a vs b from the finished configs only, c named as stopped
    cmp = compare_groups("es", by="cfg", store=store)
    assert (cmp.a.label, cmp.b.label) == ("cfg=a", "cfg=b") and len(cmp.a.run_ids) == len(cmp.b.run_ids) == 3
    assert any("stopped early" in n and "cfg=c" in n for n in cmp.notes)
    loss = next(m for m in cmp.metrics if m.metric == "loss")
    assert loss.low <= 0 <= loss.high  # the tie the rule kept, still a tie at the end

    # a resume does not run the stopped config's seeds again, nor anything that finished
    before = {r.id: r.status for r in list_runs(store, where=["group=es"]).runs}
    again = run_sweep(SweepRequest(resume="es", store=store, settings=BackendSettings(max_parallel=2)))
    assert {o.status for o in again.outcomes} <= {"done before", "stopped"}
    assert {r.id: r.status for r in list_runs(store, where=["group=es"]).runs} == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--early-stop", "asha"], "--rungs"),
        (["--early-stop", "median", "--rungs", "10"], "'median'"),
        (["--early-stop", "asha", "--rungs", "10,5"], "increasing"),
        (["--early-stop", "asha", "--rungs", "10,5s"], "all steps"),
        (["--early-stop", "asha", "--rungs", "10", "--min-seeds", "1"], "min_pairs 1"),
        (["--early-stop", "asha", "--rungs", "10", "--stop-test", "fast"], "--stop-test 'fast'"),
    ],
)
def test_bad_early_stop_options_are_exit_2_naming_the_value(cli, tmp_path, args, message):
    res = cli("sweep", "--store", str(tmp_path / "s"), "--grid", "x=1,2", *args, "--", sys.executable, "-c", "0")
    assert res.exit_code == 2, res.stderr
    assert message in res.stderr
    assert not (tmp_path / "s").exists() or not list_runs(tmp_path / "s").runs


def test_rung_values_take_the_first_logged_step_at_or_past_a_rung_or_the_last_value_at_a_time(tmp_path):
    from expkit.sweep.stopper import rung_values

    lines = [{"step": 1, "loss": 3.0}, {"step": 4, "acc": 0.1}, {"step": 6, "loss": 2.0}, {"step": 12, "loss": 1.5}]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n{torn")
    (tmp_path / "metrics.rank1.jsonl").write_text('{"step": 5, "loss": 99.0}\n')  # another rank: not judged
    steps = EarlyStopPolicy(catch_up=False, rungs=(5, 10, 20))
    # rung 5: step 6 is the first at or past it that logged loss (step 4 logged none); rung 10: step 12; 20: not yet
    assert rung_values(tmp_path, steps) == {5: 2.0, 10: 1.5}
    seconds = EarlyStopPolicy(catch_up=False, rungs=(1, 3), unit="seconds")
    assert rung_values(tmp_path, seconds, elapsed_s=2.0) == {1: 1.5}  # the last value logged by then
    assert rung_values(tmp_path, seconds) == {}  # no age, no rung in seconds


def test_a_trial_is_read_until_its_last_rung_and_not_after(tmp_path, monkeypatch):
    # its metrics file keeps growing after the last rung; each read parses it whole (~0.2 CPU-s at 100k lines
    # here), so the driver stops reading it once every rung has its value
    from expkit.sweep import stopper as stopper_mod

    plan = plan_sweep([sys.executable, "-c", "pass"], group="g", grid=["cfg=a,b"], seeds=1)
    trial = plan.trials[0]
    st = stopper_mod.EarlyStopper(EarlyStopPolicy(catch_up=False, rungs=(5, 10)), tmp_path, "g")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    metrics = run_dir / "metrics.jsonl"
    metrics.write_text(json.dumps({"step": 6, "loss": 2.0}) + "\n")
    st.start(trial)
    st.watched[trial.index].run_dir = run_dir
    reads: list[Path] = []
    real = stopper_mod.rung_values
    monkeypatch.setattr(stopper_mod, "rung_values", lambda d, *a, **k: reads.append(d) or real(d, *a, **k))
    monkeypatch.setattr(stopper_mod, "READ_EVERY_S", 0.0)
    st.poll()
    assert len(reads) == 1 and st.watched[trial.index].rungs_seen == {5}
    with metrics.open("a") as f:
        f.write(json.dumps({"step": 12, "loss": 1.5}) + "\n")
    st.poll()
    assert len(reads) == 2 and st.watched[trial.index].rungs_seen == {5, 10}
    with metrics.open("a") as f:
        f.write(json.dumps({"step": 20, "loss": 1.0}) + "\n")
    st.poll()
    st.poll()
    assert st.end(trial, str(run_dir)) == [] and len(reads) == 2  # past its last rung: not read again
    assert [(d.rung, d.config) for d in st.decisions[trial.index]] == [(5, "cfg=a"), (10, "cfg=a")]


# A flat curve for rungs in seconds: one line every 0.1 s for ~4.5 s, the loss the config's and seed's from the
# first line on, so the value at a rung does not hang on how far a loaded machine let the trial get by then.
# "a" and "b" tie as above (paired differences +0.02, -0.02); "c" is worse by 1.00 and 1.01 (2 pairs: the t
# interval with 1 degree of freedom is 1.005 +- 12.71 * 0.0071 / sqrt(2) = [0.94, 1.07], clear of 0).
FLAT_LINES = 45
FLAT = textwrap.dedent(
    f"""
    import json, os, time
    config = os.environ["EXPKIT_CONFIG_CFG"]
    seed = int(os.environ["EXPKIT_SEED"])
    a = [0.0, 0.1][seed]
    loss = 1.0 + {{"a": a, "b": a + [0.02, -0.02][seed], "c": a + 1.0 + 0.01 * seed}}[config]
    for step in range(1, {FLAT_LINES} + 1):
        print(json.dumps({{"step": step, "loss": loss}}), flush=True)
        time.sleep(0.1)
    """
)


def test_rungs_in_seconds_through_the_cli_stop_the_worse_config_and_record_the_rung_in_seconds(cli, tmp_path):
    (tmp_path / "flat.py").write_text(FLAT)
    store = tmp_path / "store"
    # the grid's order (--start-order grid), 2 at a time: a's seeds, then b's, then c's two seeds side by side;
    # c's second pair at the 2 s rung stops it
    res = cli(
        "sweep", "--store", str(store), "--grid", "cfg=a,b,c", "--seeds", "2", "-j", "2", "--name", "sec",
        "--early-stop", "asha", "--rungs", "2s,4s", "--min-seeds", "2", "--max-retries", "0", "--json",
        "--no-catch-up", "--stop-test", "paired-pooled", "--start-order", "grid",
        "--", sys.executable, str(tmp_path / "flat.py"),
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr  # every trial finished or was stopped early
    outcomes = json.loads(res.stdout)["result"]["outcomes"]
    status = {(o["config"]["cfg"], o["seed"]): o["status"] for o in outcomes}
    assert status == {("a", 0): "finished", ("a", 1): "finished", ("b", 0): "finished", ("b", 1): "finished",
                      ("c", 0): "stopped", ("c", 1): "stopped"}  # fmt: skip
    records = [read_record(store / r.id) for r in list_runs(store, where=["group=sec"]).runs]
    runs = {(r.config["cfg"], r.seed.seed): r for r in records}
    assert len(records) == len(runs)
    assert sorted(runs) == sorted(status)  # one run each (a stopped trial is not retried)
    # the tie ran to its end and its runs carry no stop
    for cfg in ("a", "b"):
        for seed in (0, 1):
            assert "early_stop" not in runs[cfg, seed].extra and _last_step(store / runs[cfg, seed].id) == FLAT_LINES
    # c: stopped at a rung in seconds, the decision and its interval in each run's record
    for seed in (0, 1):
        rec = runs["c", seed]
        stop = rec.extra["early_stop"]
        assert rec.status == "stopped" and stop["config_stopped"] and stop["config"] == "cfg=c"
        assert stop["policy"]["unit"] == "seconds" and tuple(stop["policy"]["rungs"]) == (2.0, 4.0)
        assert stop["rung"] in (2.0, 4.0) and f"rung {stop['rung']:g} s" in rec.status_reason
        assert stop["leader"] in ("cfg=a", "cfg=b") and stop["n_pairs"] == 2
        assert 0.9 < stop["low"] <= stop["delta"] <= stop["high"] < 1.1  # the interval around 1.005, clear of 0
        assert _last_step(store / rec.id) < FLAT_LINES  # cut short
