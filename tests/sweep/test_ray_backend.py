"""The Ray backend on a real local Ray instance (num_cpus=2, the ``local_ray`` of tests/conftest.py): trials as Ray
tasks writing into the shared store, a failing trial, a SIGKILLed trial retried, resume."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from expkit.runs.store import list_runs
from expkit.sweep import SweepRequest, plan_sweep, run_sweep

ray = pytest.importorskip("ray")

TRIAL_PROGRAM = Path(__file__).with_name("trial_program.py")


def test_ray_backend_runs_retries_and_resumes(local_ray, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(TRIAL_PROGRAM, tmp_path / "trial.py")
    (tmp_path / "fail-1").touch()
    (tmp_path / "selfkill-2").touch()
    store = tmp_path / "store"
    plan = plan_sweep([sys.executable, "trial.py"], group="r", grid=["lr=0.001,0.003"], seeds=3)
    res = run_sweep(SweepRequest(plan, store=store, backend="ray", max_retries=1))
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
    assert sorted(r.status for r in runs) == [
        "failed",
        "failed",
        "finished",
        "finished",
        "finished",
        "finished",
        "killed",
    ]
    (tmp_path / "fail-1").unlink()
    again = run_sweep(SweepRequest(resume="r", store=store, backend="ray"))
    assert again.complete and [o.status for o in again.outcomes].count("done before") == 4


def test_an_address_other_than_the_running_instance_is_refused(local_ray, tmp_path, monkeypatch):
    """Ray already running in this process (the user's ray.init): an address elsewhere is refused, naming both,
    instead of the sweep running silently on the instance here (it was: ray.init is skipped when initialized)."""
    from expkit.errors import UsageError
    from expkit.sweep.backends import BackendSettings

    monkeypatch.chdir(tmp_path)
    plan = plan_sweep([sys.executable, "-c", "pass"], group="addr", seeds=1)
    here = ray.get_runtime_context().gcs_address
    with pytest.raises(UsageError, match=r"127\.0\.0\.1:1.*already running in this process, connected to"):
        run_sweep(
            SweepRequest(plan, store=tmp_path / "s", backend="ray", settings=BackendSettings(address="127.0.0.1:1"))
        )
    assert not list_runs(tmp_path / "s", where=["group=addr"]).runs
    same = run_sweep(SweepRequest(plan, store=tmp_path / "s", backend="ray", settings=BackendSettings(address=here)))
    assert same.counts == {"finished": 1}


@pytest.mark.slow
def test_ctrl_c_on_a_ray_sweep_marks_killed_and_resume_finishes(tmp_path):
    """SIGINT to a real `expkit sweep --backend ray` process (its own Ray instance): the running trials'
    runs say killed, the resume runs only the rest."""
    import json
    import os
    import signal
    import subprocess
    import time

    shutil.copy(TRIAL_PROGRAM, tmp_path / "trial.py")
    (tmp_path / "slow").touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [
        sys.executable,
        "-m",
        "expkit",
        "sweep",
        "--backend",
        "ray",
        "--seeds",
        "4",
        "--name",
        "c",
        "-j",
        "2",
        "--",
        sys.executable,
        "trial.py",
    ]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 120

        def started() -> set[str]:
            return {p.name.split("-")[1] for p in tmp_path.glob("started-*")}

        while time.monotonic() < end and not {"0", "1", "2"} <= started():
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()[-2000:]
    status = {r.name: r.status for r in list_runs(tmp_path / "runs", where=["group=c"]).runs}
    assert status == {"c-t000": "finished", "c-t001": "killed", "c-t002": "killed"}
    (tmp_path / "fast").touch()
    res = subprocess.run(
        [sys.executable, "-m", "expkit", "sweep", "--resume", "c", "--backend", "ray", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=180,
    )
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    outcomes = json.loads(res.stdout)["result"]["outcomes"]
    assert [o["status"] for o in outcomes] == ["done before", "finished", "finished", "finished"]
