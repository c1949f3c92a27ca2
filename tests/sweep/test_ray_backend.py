"""The Ray backend on a real local Ray instance (num_cpus=2, started and stopped here): trials as Ray
tasks writing into the shared store, a failing trial, a SIGKILLed trial retried, resume."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from expkit.runs.store import list_runs
from expkit.sweep import plan_sweep, run_sweep

ray = pytest.importorskip("ray")

TRIAL_PROGRAM = Path(__file__).with_name("trial_program.py")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_backend_runs_retries_and_resumes(local_ray, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(TRIAL_PROGRAM, tmp_path / "trial.py")
    (tmp_path / "fail-1").touch()
    (tmp_path / "selfkill-2").touch()
    store = tmp_path / "store"
    plan = plan_sweep([sys.executable, "trial.py"], group="r", grid=["lr=0.001,0.003"], seeds=3)
    res = run_sweep(plan, store=store, backend="ray", max_retries=1)
    assert res.backend == "ray" and res.max_parallel == 2  # the instance's 2 CPUs, 1 per trial
    by_label = {o.label: o for o in res.outcomes}
    assert by_label["lr=0.001 seed=1"].status == "failed" and "fails on purpose" in by_label["lr=0.001 seed=1"].error
    # the first seed-2 trial to start SIGKILLed itself once and ran again
    seed2 = [by_label["lr=0.001 seed=2"], by_label["lr=0.003 seed=2"]]
    assert all(o.status == "finished" for o in seed2) and sorted(o.attempts for o in seed2) == [1, 2]
    assert res.counts == {"finished": 4, "failed": 2}  # seed 1 fails under both lr
    assert ray.is_initialized()  # an instance the sweep did not start is left running
    # the records were written by the Ray workers into the store the driver named
    runs = list_runs(store, where=["group=r"]).runs
    assert sorted(r.status for r in runs) == ["failed", "failed", "finished", "finished", "finished", "finished",
                                              "killed"]
    (tmp_path / "fail-1").unlink()
    again = run_sweep(resume="r", store=store, backend="ray")
    assert again.complete and [o.status for o in again.outcomes].count("done before") == 4
