"""run_sweep on the local backend: recorded trials, a failing trial, a killed trial retried, resume."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest

from expkit.errors import UsageError
from expkit.runs.store import list_runs
from expkit.sweep import BackendSettings, SweepRequest, plan_sweep, run_sweep

TRIAL_PROGRAM = Path(__file__).with_name("trial_program.py")


def write_trial(directory: Path) -> list[str]:
    """Copy the trial program into ``directory`` (its marker files live beside it); return its command."""
    shutil.copy(TRIAL_PROGRAM, directory / "trial.py")
    return [sys.executable, str(directory / "trial.py")]


@pytest.fixture(autouse=True)
def _outside_the_checkout(tmp_path, monkeypatch):
    # trials record the code of the directory they start in; a temp directory has no git state to capture
    monkeypatch.chdir(tmp_path)


def _runs(store, group):
    return list_runs(store, where=[f"group={group}"]).runs


def test_every_trial_is_a_recorded_run_with_its_config_and_seed(tmp_path):
    cmd = write_trial(tmp_path)
    store = tmp_path / "store"
    events = []
    plan = plan_sweep(cmd, group="g", grid=["lr=0.001,0.003"], seeds=2)
    res = run_sweep(
        SweepRequest(plan, store=store, settings=BackendSettings(max_parallel=2)), on_progress=events.append
    )
    assert res.counts == {"finished": 4} and res.complete and not res.cancelled
    runs = _runs(store, "g")
    assert sorted(r.name for r in runs) == ["g-t000", "g-t001", "g-t002", "g-t003"]
    by_name = {r.name: r for r in runs}
    # trial 3 = lr 0.003, seed 1: the script's loss 0.5 + 10 lr + 0.01 seed at its last step
    assert by_name["g-t003"].seed == 1
    assert by_name["g-t003"].final_metrics["loss"] == pytest.approx(0.5 + 0.03 + 0.01)
    cfg = orjson.loads((store / by_name["g-t003"].id / "config.json").read_bytes())
    assert cfg == {"lr": 0.003}
    # the command got --config lr=0.003 and one thread
    seen = orjson.loads((tmp_path / "argv-1-0.003").read_bytes())
    assert seen == {"argv": ["--config", "lr=0.003"], "omp": "1"}
    assert events[-1].finished == 4 and events[-1].running == 0 and max(e.running for e in events) == 2


def test_a_failing_trial_is_recorded_failed_and_the_others_finish(tmp_path):
    cmd = write_trial(tmp_path)
    (tmp_path / "fail-1").touch()
    store = tmp_path / "store"
    res = run_sweep(
        SweepRequest(
            plan_sweep(cmd, group="g", seeds=3), store=store, max_retries=2, settings=BackendSettings(max_parallel=2)
        )
    )
    assert [o.status for o in res.outcomes] == ["finished", "failed", "finished"]
    failed = res.outcomes[1]
    assert failed.attempts == 1  # a command that fails is not retried
    assert "RuntimeError: trial with seed 1 fails on purpose" in failed.error
    assert "Traceback" in failed.error
    statuses = {r.name: r.status for r in _runs(store, "g")}
    assert statuses == {"g-t000": "finished", "g-t001": "failed", "g-t002": "finished"}


def test_a_killed_trial_is_retried_and_its_first_attempt_stays_recorded(tmp_path):
    cmd = write_trial(tmp_path)
    (tmp_path / "selfkill-0").touch()  # the first attempt of seed 0 SIGKILLs its own process
    store = tmp_path / "store"
    res = run_sweep(
        SweepRequest(
            plan_sweep(cmd, group="g", seeds=2), store=store, max_retries=1, settings=BackendSettings(max_parallel=2)
        )
    )
    assert [o.status for o in res.outcomes] == ["finished", "finished"]
    assert res.outcomes[0].attempts == 2 and res.outcomes[1].attempts == 1
    runs = [r for r in _runs(store, "g") if r.name == "g-t000"]
    assert sorted(r.status for r in runs) == ["finished", "killed"]


def test_a_trial_killed_on_every_attempt_ends_lost(tmp_path):
    cmd = write_trial(tmp_path)
    (tmp_path / "selfkill-0").touch()
    res = run_sweep(SweepRequest(plan_sweep(cmd, group="g", seeds=1), store=tmp_path / "s", max_retries=0))
    (only,) = res.outcomes
    assert only.status == "lost" and only.attempts == 1 and "SIGKILL" in (only.error or "")
    assert not res.complete


def test_resume_runs_only_what_did_not_finish(tmp_path):
    cmd = write_trial(tmp_path)
    (tmp_path / "fail-1").touch()
    store = tmp_path / "store"
    first = run_sweep(
        SweepRequest(plan_sweep(cmd, group="g", seeds=3), store=store, settings=BackendSettings(max_parallel=2))
    )
    assert [o.status for o in first.outcomes] == ["finished", "failed", "finished"]
    (tmp_path / "fail-1").unlink()
    second = run_sweep(SweepRequest(resume="g", store=store, settings=BackendSettings(max_parallel=2)))
    assert [o.status for o in second.outcomes] == ["done before", "finished", "done before"]
    assert second.complete
    finished = [r.name for r in _runs(store, "g") if r.status == "finished"]
    assert sorted(finished) == ["g-t000", "g-t001", "g-t002"]  # nothing finished ran twice
    # a third resume has nothing left to run
    third = run_sweep(SweepRequest(resume="g", store=store))
    assert {o.status for o in third.outcomes} == {"done before"}


def test_a_new_sweep_refuses_a_group_that_has_finished_runs(tmp_path):
    cmd = write_trial(tmp_path)
    store = tmp_path / "store"
    run_sweep(SweepRequest(plan_sweep(cmd, group="g", seeds=1), store=store))
    with pytest.raises(UsageError, match="resume='g'"):
        run_sweep(SweepRequest(plan_sweep(cmd, group="g", seeds=1), store=store))


def test_bad_options_are_refused_before_anything_runs(tmp_path):
    plan = plan_sweep(["true"], group="g")
    with pytest.raises(UsageError, match="backend 'nosuch' is not one of local, ray, slurm"):
        run_sweep(SweepRequest(plan, store=tmp_path, backend="nosuch"))
    with pytest.raises(UsageError, match="does not hand out GPUs"):
        run_sweep(SweepRequest(plan, store=tmp_path, settings=BackendSettings(gpus_per_trial=1)))
    with pytest.raises(UsageError, match="max_parallel 0"):
        run_sweep(SweepRequest(plan, store=tmp_path, settings=BackendSettings(max_parallel=0)))
    with pytest.raises(UsageError, match="not both or neither"):
        run_sweep(SweepRequest(plan, resume="g", store=tmp_path))


def test_placeholders_reach_an_argparse_style_command_and_the_record_says_so(tmp_path):
    cmd = write_trial(tmp_path)
    store = tmp_path / "store"
    plan = plan_sweep([*cmd, "--lr={lr}", "--seed", "{seed}"], group="ph", grid=["lr=0.001,0.003"], seeds=2)
    res = run_sweep(SweepRequest(plan, store=store, settings=BackendSettings(max_parallel=2)))
    assert res.complete and "placeholders {lr}, {seed} in the command" in res.config_passing
    seen = orjson.loads((tmp_path / "argv-1-0.003").read_bytes())
    assert seen["argv"] == ["--lr=0.003", "--seed", "1"]  # no --config appended
    run = next(r for r in _runs(store, "ph") if r.name == "ph-t003")
    rec = orjson.loads((store / run.id / "run.json").read_bytes())
    assert rec["extra"]["sweep"]["seed_passing"] == "placeholder {seed} and EXPKIT_SEED"


def test_a_trial_that_records_its_own_config_keeps_the_grid_keys(tmp_path):
    script = tmp_path / "attach.py"
    script.write_text(
        "from expkit.runs import start\nwith start(config={'epochs': 3, 'lr': 0.5}) as run:\n    run.log(1, loss=1.0)\n"
    )
    store = tmp_path / "store"
    plan = plan_sweep([sys.executable, str(script)], group="att", grid=["lr=0.001", "bs=8,16"], seeds=1)
    res = run_sweep(SweepRequest(plan, store=store, settings=BackendSettings(max_parallel=2)))
    assert res.complete
    run = next(r for r in _runs(store, "att") if r.name == "att-t001")
    cfg = orjson.loads((store / run.id / "config.json").read_bytes())
    # the grid key bs survives the integration's own config; lr, set both ways, keeps the command's value
    assert cfg == {"lr": 0.5, "bs": 16, "epochs": 3}
    rec = orjson.loads((store / run.id / "run.json").read_bytes())
    assert any("'lr' was given as 0.001 but the command recorded 0.5" in n for n in rec["config_notes"])


def test_no_slurm_on_path_is_refused_before_anything_is_submitted(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no sinfo
    plan = plan_sweep(["true"], group="g")
    with pytest.raises(UsageError, match="no Slurm here: sbatch and sinfo are not on PATH"):
        run_sweep(SweepRequest(plan, store=tmp_path / "store", backend="slurm"))
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("run.json"))


def test_with_early_stopping_scipy_is_imported_before_the_first_trial_starts(tmp_path):
    """Issue 34 item 5: the first stop decision imported scipy (5 s under load) while the trials ran on."""
    import subprocess

    code = (
        "import sys\n"
        "from expkit.sweep import SweepRequest, plan_sweep, run_sweep\n"
        "from expkit.sweep.backends import LocalBackend, registered_backend\n"
        "from expkit.sweep.early_stop import EarlyStopPolicy\n"
        "seen = []\n"
        "class Spy(LocalBackend):\n"
        "    def submit(self, job):\n"
        "        seen.append('scipy.stats' in sys.modules)\n"
        "        return super().submit(job)\n"
        "plan = plan_sweep([sys.executable, '-c', 'pass'], group='g', seeds=2, config_args=False)\n"
        "with registered_backend('spy', lambda s: Spy(max_parallel=1)):\n"
        "    run_sweep(SweepRequest(plan, store=sys.argv[1], backend='spy', early_stop=EarlyStopPolicy(rungs=(5,))))\n"
        "print(seen)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[True, True]", out.stderr
