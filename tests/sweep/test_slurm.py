"""The Slurm backend on a real single-node Slurm: munged, slurmctld and slurmd from Debian's packages
(``make slurm`` installs them when root), configured for this machine in a temporary directory, started
here and stopped after. Skipped, with the reason, when the programs are missing, we are not root (slurmd
starts jobs as their user) or the cluster does not come up.

- a 2-config x 2-seed sweep through ``expkit sweep --backend slurm`` ends with 4 finished runs, one job
  array, their records like any backend's;
- a trial longer than its 1-minute time limit is signalled by Slurm, requeued, and resumes from the
  progress it saved in its run directory (``EXPKIT_RESUME_DIR``) in a new run of the same name.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from expkit.errors import UsageError
from expkit.runs.store import list_runs, read_record
from expkit.sweep.backends import BackendSettings, make_backend
from expkit.sweep.slurm import parse_time_limit

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "srun", "sinfo")
START_TIMEOUT_S = 60.0

SLURM_CONF = """\
ClusterName=expkit-test
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge-run/munge.sock,cred_expire=10
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
NodeName=localhost NodeHostname=localhost CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""

# A trial that counts to TOTAL, one step a second, saving its step in its run directory; started again
# with EXPKIT_RESUME_DIR, it continues from the step saved there. Prints {"step", "resumed_at"}.
RESUMABLE = """\
import json, os, pathlib, time
run = pathlib.Path(os.environ["EXPKIT_RUN_DIR"])
resume = os.environ.get("EXPKIT_RESUME_DIR")
saved = pathlib.Path(resume or ".") / "progress.json"  # an attempt stopped before its first step saved none
step = json.loads(saved.read_text())["step"] if resume and saved.exists() else 0
start = step
while step < {total}:
    time.sleep(1)
    step += 1
    (run / "progress.tmp").write_text(json.dumps({{"step": step}}))
    (run / "progress.tmp").replace(run / "progress.json")  # whole, even if SIGTERM comes mid-write
    print(json.dumps({{"step": step, "resumed_at": start}}), flush=True)
if step == start:  # resumed after the last step was saved (signalled between it and the exit): report it still
    print(json.dumps({{"step": step, "resumed_at": start}}), flush=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _log_tail(d: Path) -> str:
    out = []
    for name in ("munged.log", "slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"):
        p = d / name
        if p.exists():
            out.append(f"{name}: " + " | ".join(p.read_text(errors="replace").strip().splitlines()[-3:]))
    return "; ".join(out)


def _node_idle(env: dict[str, str]) -> bool:
    r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env, timeout=30, check=False)
    return r.returncode == 0 and r.stdout.strip() == "idle"


def _start(d: Path, env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """munged, slurmctld, slurmd in the foreground (ours to stop); their output in ``d/*.out``."""
    key_dir, run_dir = d / "munge-key", d / "munge-run"
    key_dir.mkdir(mode=0o700)
    run_dir.mkdir(mode=0o755)
    key = key_dir / "munge.key"
    key.write_bytes(os.urandom(1024))  # munge's key is any 1024 random bytes (mungekey writes the same)
    key.chmod(0o400)
    (d / "state").mkdir()
    (d / "spool").mkdir()
    conf = d / "slurm.conf"
    conf.write_text(
        SLURM_CONF.format(d=d, ctld_port=_free_port(), d_port=_free_port(), cpus=min(2, os.cpu_count() or 1))
    )
    commands = [
        ("munged", ["munged", "-F", "-f", f"--key-file={key}", f"--socket={run_dir / 'munge.sock'}",
                    f"--pid-file={run_dir / 'munged.pid'}", f"--log-file={d / 'munged.log'}",
                    f"--seed-file={key_dir / 'seed'}"]),
        ("slurmctld", ["slurmctld", "-D", "-f", str(conf)]),
        ("slurmd", ["slurmd", "-D", "-f", str(conf), "-N", "localhost"]),
    ]  # fmt: skip
    procs = []
    for name, cmd in commands:
        with open(d / f"{name}.out", "wb") as out:
            procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env))
        if name == "munged":
            deadline = time.monotonic() + 10
            while not (run_dir / "munge.sock").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
    return procs


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):  # slurmd, slurmctld, munged
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A one-node Slurm started in a temporary directory; SLURM_CONF points at it while the module runs."""
    pytest.importorskip("submitit", reason="the Slurm backend needs submitit (pip install 'expkit[slurm]')")
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        pytest.skip(f"no {', '.join(missing)} on PATH (Debian: `make slurm` installs slurmctld slurmd munge as root)")
    if os.geteuid() != 0:
        pytest.skip("a local Slurm is started as root here (slurmd starts each job as its user)")
    d = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "SLURM_CONF": str(d / "slurm.conf")}
    procs = _start(d, env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _node_idle(env):
            dead = [p.args[0] for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(map(str, dead))} exited" if dead else f"no idle node within {START_TIMEOUT_S:g} s"
                pytest.skip(f"the local Slurm did not start ({why}): {_log_tail(d)}")
            time.sleep(0.5)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SLURM_CONF", str(d / "slurm.conf"))
            yield d
    finally:
        _stop(procs)


def test_a_2x2_sweep_runs_as_one_job_array_with_the_same_records(slurm_cluster, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(Path(__file__).with_name("trial_program.py"), tmp_path / "trial.py")
    store = tmp_path / "store"
    r = cli(
        "sweep", "--backend", "slurm", "--partition", "debug", "--time", "00:10:00", "--grid", "lr=0.1,0.2",
        "--seeds", "2", "--name", "sl", "--store", str(store), "--json", "--", sys.executable, "trial.py",
    )  # fmt: skip
    assert r.exit_code == 0, (r.stdout, r.stderr, _log_tail(slurm_cluster))
    res = json.loads(r.stdout)["result"]
    assert res["backend"] == "slurm" and res["counts"] == {"finished": 4}
    runs = list_runs(store, where=["group=sl"]).runs
    assert sorted(r.status for r in runs) == ["finished"] * 4
    records = [read_record(store / r.id) for r in runs]
    jobs = sorted(rec.extra["slurm"]["job_id"] for rec in records)
    arrays = {j.split("_")[0] for j in jobs}
    assert len(arrays) == 1 and sorted(j.split("_")[1] for j in jobs) == ["0", "1", "2", "3"], jobs
    for rec in records:
        assert rec.extra["sweep"]["backend"] == "slurm" and rec.extra["slurm"]["partition"] == "debug"
        lr, seed = rec.config["lr"], rec.seed.seed if rec.seed else None
        assert rec.final_metrics["loss"] == pytest.approx(0.5 + 10 * lr + 0.01 * seed)  # its own config and seed
        assert rec.environment is not None and rec.hardware is not None and rec.code is not None
        assert (store / rec.id / "output.log").exists() and (store / rec.id / "metrics.jsonl").exists()


@pytest.mark.slow
def test_a_trial_past_its_time_limit_is_requeued_and_resumes(slurm_cluster, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    total = 50  # steps of 1 s: Slurm signals a 1-minute task 15 s before its limit at the latest (or earlier)
    (tmp_path / "count.py").write_text(RESUMABLE.format(total=total))
    store = tmp_path / "store"
    r = cli(
        "sweep", "--backend", "slurm", "--time", "1", "--seeds", "1", "--name", "rq", "--store", str(store),
        "--json", "--", sys.executable, "count.py",
    )  # fmt: skip
    assert r.exit_code == 0, (r.stdout, r.stderr, _log_tail(slurm_cluster))
    res = json.loads(r.stdout)["result"]
    assert res["counts"] == {"finished": 1}
    runs = sorted(list_runs(store, where=["group=rq"]).runs, key=lambda r: r.created_at)
    records = [read_record(store / r.id) for r in runs]
    seen = [  # what a failure prints: each attempt's end, and Slurm's side
        (r.id, r.status, r.signal, r.status_reason, r.extra.get("slurm"), r.extra["sweep"]["attempt"], r.final_metrics)
        for r in records
    ]
    why = (seen, _log_tail(slurm_cluster), _submitit_logs(store))
    assert len(records) >= 2 and {rec.name for rec in records} == {"rq-t000"}, why  # one trial, requeued
    last = records[-1]
    assert last.status == "finished" and last.final_metrics.get("step") == total, why
    # Slurm's warning (SIGUSR2) came and was handled at least once: the run marked, the task requeued
    assert "requeued" in (records[0].status_reason or ""), why
    for before, after in itertools.pairwise(records):
        assert before.status == "killed", why
        if "requeued" in (before.status_reason or ""):  # the requeued task resumes from this run's directory
            assert after.extra["slurm"]["resumed_from"] == str(store / before.id), why
            assert after.extra["slurm"]["requeues"] == before.extra["slurm"]["requeues"] + 1, why
        else:  # Slurm killed the task before its warning was handled (it checks limits on a ~30 s tick): the
            # record says so, and the sweep's retry runs the trial again as a new attempt
            assert "by no requeue of expkit's" in (before.status_reason or ""), why
            assert after.extra["sweep"]["attempt"] == before.extra["sweep"]["attempt"] + 1, why
    # each resumed run continued from the step its predecessor saved: it did not count from 0 again
    resumed = [
        (json.loads((store / b.id / "progress.json").read_text())["step"], a)
        for b, a in itertools.pairwise(records)
        if a.extra["slurm"]["resumed_from"] and (store / b.id / "progress.json").exists()
    ]
    assert any(0 < saved < total for saved, _ in resumed), why
    for saved, after in resumed:
        assert after.final_metrics.get("resumed_at", saved) == saved, why


def _submitit_logs(store: Path) -> str:
    return " || ".join(
        f"{p.name}: " + " | ".join(p.read_text(errors="replace").strip().splitlines()[-8:])
        for p in sorted(store.joinpath(".backends", "slurm").glob("*/*.err"))
    )


def test_slurm_settings_are_checked_before_anything_is_submitted():
    pytest.importorskip("submitit")
    assert parse_time_limit("00:10:00") == 10 and parse_time_limit("1-00") == 1440 and parse_time_limit("5:30") == 6
    with pytest.raises(UsageError, match="time limit '10 minutes' is not a Slurm time"):
        make_backend("slurm", BackendSettings(time_limit="10 minutes"))
    with pytest.raises(UsageError, match=r"gpus_per_trial 0\.5 must be a whole number"):
        make_backend("slurm", BackendSettings(gpus_per_trial=0.5))
    with pytest.raises(UsageError, match="address 'auto' is for Ray"):
        make_backend("slurm", BackendSettings(address="auto"))
    with pytest.raises(UsageError, match="partition 'gpu' is for the slurm backend; the local backend takes none"):
        make_backend("local", BackendSettings(partition="gpu"))


@pytest.mark.slow
def test_a_trial_scancelled_outside_the_sweep_runs_again(slurm_cluster, tmp_path, monkeypatch):
    """A job ended by Slurm (here `scancel` from outside: SIGTERM to the job step, SIGKILL after KillWait)
    is a killed or lost attempt, and the trial runs again (max_retries); its second run finishes."""
    import threading

    from expkit.sweep import SweepRequest, plan_sweep, run_sweep

    monkeypatch.chdir(tmp_path)
    (tmp_path / "trial.py").write_text(
        "import json, pathlib, time\n"
        "first = pathlib.Path('first-started')\n"
        "if not first.exists():\n"
        "    first.touch()\n"
        "    time.sleep(300)\n"
        "print(json.dumps({'step': 1, 'loss': 0.5}))\n"
    )
    store = tmp_path / "store"
    plan = plan_sweep([sys.executable, "trial.py"], group="sc", seeds=1, config_args=False)
    out: list = []
    runner = threading.Thread(target=lambda: out.append(run_sweep(SweepRequest(plan, store=store, backend="slurm"))))
    runner.start()
    deadline = time.monotonic() + 120
    while not (tmp_path / "first-started").exists():
        assert time.monotonic() < deadline and runner.is_alive(), _log_tail(slurm_cluster)
        time.sleep(0.5)
    jobs = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, check=True).stdout.split()
    assert len(jobs) == 1, jobs
    subprocess.run(["scancel", jobs[0]], check=True)
    runner.join(timeout=240)
    assert not runner.is_alive() and out, _log_tail(slurm_cluster)
    (res,) = out
    (trial,) = res.outcomes
    assert trial.status == "finished" and trial.attempts == 2, trial
    statuses = sorted(r.status for r in list_runs(store, where=["group=sc"]).runs)
    assert statuses in (["finished", "killed"], ["finished", "lost"]), statuses  # one run per attempt


def test_a_signal_after_the_trial_finished_hands_back_its_outcome_not_a_rerun():
    """Slurm's SIGUSR2 can come as the command ends: the requeued task must return the finished outcome,
    not run the command (and make a second finished run) again."""
    import threading

    pytest.importorskip("submitit")
    from expkit.sweep.backends import AttemptOutcome, TrialJob
    from expkit.sweep.slurm import SlurmTrial

    job = TrialJob(("true",), store="/nonexistent", group="g", name="g-t000", seed=0, config={}, env={}, cwd=".")
    trial = SlurmTrial(job)
    done = AttemptOutcome("finished", "r1", "/nonexistent/r1", 0, 1.0, {"loss": 0.5})
    trial._result.append(done)
    trial._thread = threading.Thread(target=lambda: None)
    trial._thread.start()
    trial._thread.join()
    trial._ended = True
    again = trial.checkpoint()
    assert again.function() == done  # the requeued task's callable returns the outcome, runs nothing


def test_checkpoint_does_not_wait_on_the_lock_an_interrupted_join_holds():
    """SIGUSR2's handler runs checkpoint in the main thread, which can be inside Thread.join() between taking the
    ended thread's lock and releasing it (CI: the handler hung there until Slurm killed the task). checkpoint must
    not call is_alive() or join() on that thread."""
    import threading

    pytest.importorskip("submitit")
    from expkit.sweep.backends import AttemptOutcome, TrialJob
    from expkit.sweep.slurm import SlurmTrial

    job = TrialJob(("true",), store="/nonexistent", group="g", name="g-t000", seed=0, config={}, env={}, cwd=".")
    trial = SlurmTrial(job)
    trial._result.append(AttemptOutcome("killed", None, None, -12, 1.0, {}, "signal SIGUSR2"))
    trial._thread = threading.Thread(target=lambda: None)
    trial._thread.start()
    lock = getattr(trial._thread, "_tstate_lock", None)
    if lock is None:
        pytest.skip("this Python's Thread has no _tstate_lock (3.13+ joins another way)")
    assert lock.acquire(timeout=10)  # what the interrupted join holds
    trial._ended = True
    out: list = []
    waiter = threading.Thread(target=lambda: out.append(trial.checkpoint()), daemon=True)
    waiter.start()
    waiter.join(timeout=10)
    lock.release()
    assert out and out[0].function.requeues == 1, "checkpoint waited on the thread's join lock"


def test_a_command_killed_by_no_requeue_of_ours_says_so_in_its_record(tmp_path):
    """Slurm can kill a task at its time limit before its warning signal is handled (it checks limits on a
    ~30 s tick), or scancel it: the run is ``killed`` with a reason, not a bare status (the sweep then
    retries it)."""
    from expkit.sweep.backends import TrialJob
    from expkit.sweep.slurm import SlurmTrial

    store = tmp_path / "store"
    command = (sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    job = TrialJob(command, store=str(store), group="g", name="g-t000", seed=0, config={}, env={}, cwd=str(tmp_path))
    out = SlurmTrial(job)()
    assert out.status == "killed"
    rec = read_record(Path(out.run_dir))
    assert rec.status == "killed" and rec.signal == "SIGTERM", rec
    assert "by no requeue of expkit's" in rec.status_reason and "signal SIGTERM" in rec.status_reason, rec


# A trial that notes each start (one file per start, so a trial run twice leaves two) and takes a few seconds.
COUNTED = """\
import json, os, pathlib, time
here = pathlib.Path(__file__).parent
key = f"{os.environ['EXPKIT_CONFIG_LR']}-{os.environ['EXPKIT_SEED']}"
(here / "starts").mkdir(exist_ok=True)
(here / "starts" / f"{key}-{time.time_ns()}").touch()
time.sleep(6)
lr, seed = float(os.environ["EXPKIT_CONFIG_LR"]), int(os.environ["EXPKIT_SEED"])
print(json.dumps({"step": 1, "loss": 1.0 + lr + 0.01 * seed}))
"""


@pytest.mark.slow
def test_a_driver_killed_with_sigkill_is_resumed_without_running_any_trial_twice(
    slurm_cluster, cli, tmp_path, monkeypatch
):
    """Issue 34 items 1-3: ``kill -9`` of the driver while its array runs, then ``--resume`` with no backend flag:
    the resume runs on Slurm (recorded in the plan), adopts the tasks still queued or running instead of
    submitting them again, and every (config, seed) ends with exactly one start and one finished run; ``runs ls``
    lists no broken run (submitit's folder is outside the runs' namespace)."""
    import signal

    from expkit.sweep.driver import read_backend

    monkeypatch.chdir(tmp_path)
    (tmp_path / "trial.py").write_text(COUNTED)
    store = tmp_path / "store"
    driver = subprocess.Popen(
        [sys.executable, "-m", "expkit", "sweep", "--backend", "slurm", "--partition", "debug", "--time", "00:10:00",
         "--grid", "lr=0.03,0.1", "--seeds", "3", "--name", "kx", "--store", str(store), "--", sys.executable,
         "trial.py"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    jobs = store / "groups" / "kx.sweep.jobs.jsonl"
    deadline = time.monotonic() + 120
    while not (jobs.exists() and len(jobs.read_text().splitlines()) == 6 and (tmp_path / "starts").exists()):
        assert time.monotonic() < deadline and driver.poll() is None, _log_tail(slurm_cluster)
        time.sleep(0.2)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    assert read_backend(store, "kx")[0] == "slurm"
    r = cli("sweep", "--resume", "kx", "--store", str(store), "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr, _log_tail(slurm_cluster))
    res = json.loads(r.stdout)["result"]
    assert res["backend"] == "slurm" and res["complete"]
    starts = sorted(p.name.rsplit("-", 1)[0] for p in (tmp_path / "starts").iterdir())
    assert starts == sorted(f"{lr}-{s}" for lr in ("0.03", "0.1") for s in range(3)), starts  # each started once
    finished = [r for r in list_runs(store, where=["group=kx"]).runs if r.status == "finished"]
    assert sorted(r.name for r in finished) == [f"kx-t{i:03d}" for i in range(6)]
    listing = list_runs(store)
    assert listing.broken == () and (store / ".backends" / "slurm").is_dir() and not (store / "slurm").exists()
    r = cli("compare", "kx", "--by", "lr", "--store", str(store), "--json")
    assert r.exit_code == 0, r.stderr


def test_a_resume_refuses_a_backend_or_setting_that_conflicts_with_the_recorded_one(cli, tmp_path, monkeypatch):
    """Issue 34 item 2: the plan file records the backend and its settings; resume uses them."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(Path(__file__).with_name("trial_program.py"), tmp_path / "trial.py")
    (tmp_path / "fail-1").touch()  # seed 1 fails: the sweep is left to resume
    store = tmp_path / "store"
    r = cli("sweep", "--grid", "lr=0.1", "--seeds", "2", "--name", "rb", "--store", str(store), "--cpus-per-trial",
            "2", "--", sys.executable, "trial.py")  # fmt: skip
    assert r.exit_code == 1
    from expkit.sweep.driver import read_backend

    name, settings = read_backend(store, "rb")
    assert name == "local" and settings.cpus_per_trial == 2.0
    r = cli("sweep", "--resume", "rb", "--store", str(store), "--backend", "slurm")
    assert r.exit_code == 2 and "--backend 'slurm' conflicts with the backend sweep 'rb' ran on: 'local'" in r.stderr
    r = cli("sweep", "--resume", "rb", "--store", str(store), "--cpus-per-trial", "4")
    assert r.exit_code == 2 and "--cpus-per-trial 4.0 conflicts with the cpus_per_trial sweep 'rb' ran with" in r.stderr
    (tmp_path / "fail-1").unlink()
    r = cli("sweep", "--resume", "rb", "--store", str(store), "--json")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)["result"]
    assert res["backend"] == "local" and res["threads_per_trial"] == 2  # the recorded settings, not the defaults
