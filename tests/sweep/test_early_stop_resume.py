"""A resume keeps a config the rule stopped stopped, even when none of its runs carries the decision (a
trial cancelled before the driver found its run, or a driver killed between the stop and the marks): the
decision is kept beside the plan (``<group>.sweep.stopped.json``) when the config is stopped."""

from __future__ import annotations

import dataclasses
import sys
import textwrap

import pytest

from expkit.runs.store import list_runs, read_record, write_record
from expkit.sweep import SweepRequest, plan_sweep, run_sweep
from expkit.sweep.backends import BackendSettings
from expkit.sweep.early_stop import EarlyStopPolicy

# "c" is worse than "a" by ~1 on every seed: two paired seeds exclude 0 at the first rung; its second seed
# waits at step 5 until the rule stops it (cancelled mid-run, whatever the load)
CURVE = textwrap.dedent(
    """
    import json, os, time
    seed = int(os.environ["EXPKIT_SEED"])
    offset = {"a": 0.1 * seed, "c": 1.0 + 0.11 * seed}[os.environ["EXPKIT_CONFIG_CFG"]]
    for step in range(1, 41):
        print(json.dumps({"step": step, "loss": 1.0 + offset + 1.0 / step}), flush=True)
        time.sleep(0.03)
        if step == 5 and seed > 0 and offset > 1:  # "c" past its first seed waits here to be stopped
            time.sleep(60)
    """
)


@pytest.fixture(autouse=True)
def _outside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_a_resume_keeps_a_stopped_config_stopped_when_its_runs_lost_the_decision(tmp_path):
    (tmp_path / "curve.py").write_text(CURVE)
    store = tmp_path / "store"
    plan = plan_sweep([sys.executable, str(tmp_path / "curve.py")], group="es", grid=["cfg=a,c"], seeds=4, start="grid")
    policy = EarlyStopPolicy(catch_up=False, rungs=(5, 20), min_pairs=2)
    first = run_sweep(SweepRequest(plan, store=store, settings=BackendSettings(max_parallel=1), early_stop=policy))
    assert [d.config for d in first.early_stop.stopped] == ["cfg=c"]
    assert "stopped" in [o.status for o in first.outcomes if o.config["cfg"] == "c"]
    assert (store / "groups" / "es.sweep.stopped.json").exists()
    c_first = [o for o in first.outcomes if o.config["cfg"] == "c"]
    cancelled = [o for o in c_first if o.status == "stopped" and o.run_id]
    assert cancelled, [(o.label, o.status) for o in first.outcomes]
    # what a lost mark leaves: the cancelled run says killed, with no decision in it (a killed run's values are
    # not evidence the rule takes back), and the trials never started have no run at all
    for o in cancelled:
        rec = read_record(store / o.run_id)
        extra = {k: v for k, v in rec.extra.items() if k != "early_stop"}
        write_record(store, dataclasses.replace(rec, status="killed", status_reason="lost mark", extra=extra))
    before = {r.id for r in list_runs(store, where=["group=es"]).runs}
    again = run_sweep(SweepRequest(resume="es", store=store, settings=BackendSettings(max_parallel=1)))
    assert {r.id for r in list_runs(store, where=["group=es"]).runs} == before, "a trial of the stopped config ran"
    assert [o.status for o in again.outcomes if o.config["cfg"] == "c"] == [
        "done before" if o.status == "finished" else "stopped" for o in c_first
    ]
    assert [d.config for d in again.early_stop.stopped] == ["cfg=c"]


def test_a_new_sweep_of_the_same_group_name_does_not_inherit_stops(tmp_path):
    (tmp_path / "curve.py").write_text(CURVE)
    store = tmp_path / "store"
    stale = store / "groups" / "es.sweep.stopped.json"
    stale.parent.mkdir(parents=True)
    stale.write_text(
        '{"cfg=a": {"config": "cfg=a", "rung": 5, "leader": "cfg=c", "n_pairs": 2, "delta": 1.0, '
        '"low": 0.5, "high": 1.5, "stop": true, "reason": "stale"}}'
    )
    plan = plan_sweep([sys.executable, str(tmp_path / "curve.py")], group="es", grid=["cfg=a"], seeds=2)
    res = run_sweep(
        SweepRequest(plan, store=store, early_stop=EarlyStopPolicy(catch_up=False, rungs=(5,), min_pairs=2))
    )
    assert res.counts == {"finished": 2} and not stale.exists()
