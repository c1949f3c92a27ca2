"""`expkit sweep`: recorded trials, exit codes, --json, resume; Ctrl-C on a real sweep process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TRIAL_PROGRAM = Path(__file__).parents[1] / "sweep" / "trial_program.py"
EXPKIT = [sys.executable, "-m", "expkit"]


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(TRIAL_PROGRAM, tmp_path / "trial.py")
    monkeypatch.chdir(tmp_path)  # outside any checkout: no code record to capture
    monkeypatch.delenv("EXPKIT_STORE", raising=False)
    return tmp_path


def test_sweep_records_every_trial_and_says_how(cli, proj: Path) -> None:
    r = cli(
        "sweep", "--grid", "lr=0.001,0.003", "--seeds", "2", "--name", "lr", "-j", "2", "--", sys.executable, "trial.py"
    )
    assert r.exit_code == 0, r.stderr
    assert "4 trials on local (2 at a time, 1 thread(s) each)" in r.stdout and "4 finished" in r.stdout
    assert "EXPKIT_CONFIG_<KEY>" in r.stdout and "--config KEY=VALUE" in r.stdout
    assert "lr=0.003 seed=1" in r.stdout
    # said before the first trial starts: backend, parallelism, threads per trial
    assert (
        "4 trials to run (0 finished before) on the local backend, 2 at a time, "
        "OMP_NUM_THREADS=MKL_NUM_THREADS=1 each" in r.stderr
    )
    runs = [p for p in (proj / "runs").iterdir() if (p / "run.json").exists()]
    assert len(runs) == 4


def test_sweep_json_and_a_failed_trial_exit_1(cli, proj: Path) -> None:
    (proj / "fail-1").touch()
    r = cli("sweep", "--seeds", "3", "--name", "f", "--json", "--", sys.executable, "trial.py")
    assert r.exit_code == 1
    res = json.loads(r.stdout)["result"]
    assert res["counts"] == {"finished": 2, "failed": 1} and res["complete"] is False
    assert [o["status"] for o in res["outcomes"]] == ["finished", "failed", "finished"]
    assert "expkit sweep --resume f" in r.stderr
    # resume after the cause is gone: only the failed trial runs
    (proj / "fail-1").unlink()
    r = cli("sweep", "--resume", "f", "--json")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)["result"]
    assert [o["status"] for o in res["outcomes"]] == ["done before", "finished", "done before"]


def test_sweep_usage_errors_exit_2(cli, proj: Path) -> None:
    r = cli("sweep", "--seeds", "2")
    assert r.exit_code == 2 and "no command given" in r.stderr
    r = cli("sweep", "--grid", "lr", "--", "python", "t.py")
    assert r.exit_code == 2 and "not KEY=V1,V2" in r.stderr
    r = cli("sweep", "--resume", "nothing")
    assert r.exit_code == 2 and "no sweep 'nothing'" in r.stderr
    r = cli("sweep", "--resume", "x", "--", "python", "t.py")
    assert r.exit_code == 2 and "give no command" in r.stderr


def test_ray_missing_says_which_extra(cli, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    r = cli("sweep", "--backend", "ray", "--name", "r", "--", sys.executable, "trial.py")
    assert r.exit_code == 2 and "pip install 'expkit[ray]'" in r.stderr


def _wait_for(pred, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def test_ctrl_c_kills_running_trials_and_resume_finishes_the_rest(proj: Path) -> None:
    (proj / "slow").touch()  # seeds 1.. sleep 60 s until `fast` exists
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [*EXPKIT, "sweep", "--seeds", "4", "--name", "c", "-j", "2", "--", sys.executable, "trial.py"],
        cwd=proj,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # seed 0 finishes at once; seeds 1 and 2 then sleep in their trials
        started = lambda: {p.name.split("-")[1] for p in proj.glob("started-*")}  # noqa: E731
        assert _wait_for(lambda: {"0", "1", "2"} <= started(), 60), started()
        proc.send_signal(signal.SIGINT)  # to the sweep only, as `kill -INT`; a terminal sends it to all
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    assert "expkit sweep --resume c" in err.decode()
    from expkit.runs.store import list_runs

    status = {r.name: r.status for r in list_runs(proj / "runs", where=["group=c"]).runs}
    assert status == {"c-t000": "finished", "c-t001": "killed", "c-t002": "killed"}  # seed 3 never started
    (proj / "fast").touch()
    res = subprocess.run(
        [*EXPKIT, "sweep", "--resume", "c", "--json"], cwd=proj, env=env, capture_output=True, timeout=120
    )
    assert res.returncode == 0, res.stderr.decode()
    outcomes = json.loads(res.stdout)["result"]["outcomes"]
    assert [o["status"] for o in outcomes] == ["done before", "finished", "finished", "finished"]
    runs = list_runs(proj / "runs", where=["group=c"]).runs
    finished = sorted(r.name for r in runs if r.status == "finished")
    assert finished == ["c-t000", "c-t001", "c-t002", "c-t003"]  # seed 0 did not run twice
    assert len([p for p in proj.glob("started-0-*")]) == 1


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "--address '127.0.0.1:1': no Ray cluster there"),
        ("ray://127.0.0.1:1", "--address 'ray://127.0.0.1:1': no Ray cluster there"),
        ("not an address", "--address 'not an address' is not a Ray cluster address"),
    ],
)
def test_an_unreachable_or_malformed_address_is_exit_2_naming_it(cli, proj: Path, address: str, message: str) -> None:
    pytest.importorskip("ray")
    from timebound import assert_within, timed

    # the reference: an address refused before any connection is tried; the defect waited for a cluster
    _, reference = timed(lambda: cli("sweep", "--backend", "ray", "--address", "not an address", "--", "true"))
    args = ("sweep", "--backend", "ray", "--address", address, "--name", "ray1", "--", sys.executable, "trial.py")
    r, seconds = timed(lambda: cli(*args))
    assert r.exit_code == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert_within(seconds, reference, factor=20.0, floor_s=10.0)


def test_cpus_per_trial_nan_is_exit_2(cli, proj: Path) -> None:
    r = cli("sweep", "--cpus-per-trial", "nan", "--name", "nan1", "--", sys.executable, "trial.py")
    assert r.exit_code == 2 and "--cpus-per-trial nan must be a finite number > 0" in r.stderr
    r = cli("sweep", "--gpus-per-trial", "inf", "--name", "inf1", "--", sys.executable, "trial.py")
    assert r.exit_code == 2 and "--gpus-per-trial inf must be a finite number >= 0" in r.stderr


def test_runs_ls_shows_the_grid_keys_and_compare_takes_config_dot_key(cli, proj: Path) -> None:
    r = cli(
        "sweep",
        "--grid",
        "lr=0.001,0.003",
        "--seeds",
        "2",
        "--name",
        "cols",
        "-j",
        "2",
        "--",
        sys.executable,
        "trial.py",
    )
    assert r.exit_code == 0, r.stderr
    r = cli("runs", "ls", "--where", "group=cols")
    header, *rows = (line.split("\t") for line in r.stdout.splitlines())
    assert header[:7] == ["id", "name", "status", "created", "commit", "seed", "lr"]
    assert sorted((row[1], row[6]) for row in rows) == [
        ("cols-t000", "0.001"),
        ("cols-t001", "0.001"),
        ("cols-t002", "0.003"),
        ("cols-t003", "0.003"),
    ]
    listing = json.loads(cli("runs", "ls", "--json").stdout)["result"]
    assert listing["varying_config"] == {"cols": ["lr"]}
    by_key = json.loads(cli("compare", "cols", "--by", "lr", "--json").stdout)["result"]
    by_dotted = json.loads(cli("compare", "cols", "--by", "config.lr", "--json").stdout)["result"]
    assert by_dotted["metrics"] == by_key["metrics"] and by_dotted["a"]["label"] == "lr=0.001"


def test_a_second_concurrent_resume_is_refused_and_nothing_runs_twice(proj: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("EXPKIT_STORE", None)
    first = subprocess.Popen(
        [
            *EXPKIT,
            "sweep",
            "--name",
            "lk",
            "--seeds",
            "2",
            "-j",
            "2",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(4)",
        ],
        cwd=proj,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lock = proj / "runs" / "groups" / "lk.sweep.lock"
    try:
        assert _wait_for(lambda: lock.exists() and lock.read_text().startswith("pid"), 60)
        second = subprocess.run(
            [*EXPKIT, "sweep", "--resume", "lk"], cwd=proj, env=env, capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 2, second.stderr
        assert f"sweep 'lk' is already running in {proj / 'runs'} (pid {first.pid})" in second.stderr
    finally:
        _out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    # the lock went with the first process: a resume now finds both trials finished and runs nothing
    third = subprocess.run(
        [*EXPKIT, "sweep", "--resume", "lk", "--json"], cwd=proj, env=env, capture_output=True, text=True, timeout=120
    )
    res = json.loads(third.stdout)["result"]
    assert third.returncode == 0 and res["counts"] == {"done before": 2}
    finished = [p for p in (proj / "runs").iterdir() if (p / "run.json").exists()]
    assert len(finished) == 2


def test_a_placeholder_naming_no_grid_key_and_an_expkit_subcommand_as_the_command_are_exit_2(
    cli, tmp_path, monkeypatch
):
    """Issue 34 item 6: ``{lrr}`` reached the script literally; ``expkit sweep compare NAME`` ran ``compare`` as
    every trial's program."""
    monkeypatch.chdir(tmp_path)
    r = cli("sweep", "--grid", "lr=0.1,0.2", "--name", "p", "--", "python", "t.py", "--lr", "{lrr}")
    assert (
        r.exit_code == 2 and "placeholder {lrr} in argument '{lrr}' names no grid key (did you mean {lr}?)" in r.stderr
    )
    r = cli("sweep", "compare", "kx")
    assert r.exit_code == 2
    err = " ".join(r.stderr.split())
    assert "starts with 'compare', an expkit command, not a program" in err and "expkit compare kx" in err
    assert not (tmp_path / "runs").exists()  # nothing ran
