"""The Slurm backend: trials as a Slurm job array, submitted through ``submitit``.

Each trial is one array task that runs ``expkit.runs.execute.execute`` on the node Slurm chose (the same
seven records as the other backends), in the store the driver resolved: the store, submitit's folder
(``<store>/.backends/slurm/``: a dot folder, outside the runs' namespace, so ``runs ls`` does not take it for a
run) and the Python environment must be on a filesystem every node mounts at the same
path. The driver keeps ``max_parallel`` trials (default 256) handed to Slurm; the trials handed over
before it next waits become one array (``sbatch --array``): a sweep of up to ``max_parallel`` trials is
one array, a larger one tops up with a small array as trials end. Slurm decides where and when each runs.

Time limit and preemption: Slurm signals the task (SIGUSR2) ``signal_delay_s`` before its time limit, or
when it is preempted; submitit calls the trial's ``checkpoint``, which stops the trial's command (SIGTERM,
SIGKILL after a grace), marks its run ``killed`` (``status_reason`` says it was requeued) and requeues the
task (``scontrol requeue``), at most ``max_requeues`` times. The requeued task runs the command again as a
new run of the same name, with ``EXPKIT_RESUME_DIR`` = the run directory of the attempt before: a command
that saves its progress into ``EXPKIT_RUN_DIR`` resumes from there. Each run records its Slurm job id and
how many times it was requeued under ``extra.slurm``.

A driver killed while its trials run (``kill -9``) leaves them in Slurm: the driver records each task's job id
in the sweep's jobs file as soon as sbatch returns, and a resume ``adopt``s the tasks squeue still lists
(pending or running): it waits for them and takes their result from submitit's folder instead of submitting
them again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from expkit.errors import MissingDependency, UsageError
from expkit.sweep.backends import AttemptOutcome, BackendSettings, TrialJob, _execute_job

__all__ = ["SlurmBackend", "SlurmTrial", "make_slurm_backend", "parse_time_limit"]

DEFAULT_PARALLEL = 256  # trials handed to Slurm at once when max_parallel is not given (submitit's %N default)
DEFAULT_TIME = "01:00:00"
MAX_REQUEUES = 3  # time limits or preemptions a trial may survive
POLL_S = 0.2  # how often the attempt's waits look whether its thread ended
STOP_GRACE_S = 10.0  # after SIGTERM, the trial's command has this long to save its state before SIGKILL
# Slurm keeps an ended job in squeue for MinJobAge (300 s by default); a job gone from squeue (or in an end
# state there) whose result file has not appeared within this long was ended by Slurm itself: lost.
RESULT_GRACE_S = 20.0
SQUEUE_EVERY_S = 5.0
_END_STATES = {
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIMEOUT",
}
BACKEND_FOLDER = (".backends", "slurm")  # under the store; a dot folder is no run (expkit.runs.store skips them)
_TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_time_limit(text: str) -> int:
    """Minutes (rounded up) of a Slurm time limit: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM`` or
    ``D-HH:MM:SS`` (sbatch's ``--time`` forms).

    Raises:
        UsageError: any other text, or a limit of zero.

    Example:
        >>> parse_time_limit("00:10:00"), parse_time_limit("90"), parse_time_limit("1-02:00")
        (10, 90, 1560)
    """
    m = _TIME_RE.match(text.strip())
    if m is None:
        raise UsageError(
            f"time limit {text!r} is not a Slurm time", hint="give MM, HH:MM:SS or D-HH:MM:SS, e.g. 00:10:00"
        )
    days, a, b, c = m.groups()
    n = 1 + (b is not None) + (c is not None)
    if days is not None:  # D-HH[:MM[:SS]]
        seconds = int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    elif n == 1:  # MM
        seconds = int(a) * 60
    elif n == 2:  # MM:SS
        seconds = int(a) * 60 + int(b)
    else:  # HH:MM:SS
        seconds = int(a) * 3600 + int(b) * 60 + int(c)
    if seconds <= 0:
        raise UsageError(f"time limit {text!r} is zero", hint="give a positive limit, e.g. 00:10:00")
    return math.ceil(seconds / 60)


def _signal_delay_s(minutes: int) -> int:
    """How long before the time limit Slurm signals the task: submitit's 90 s, less for short limits (a
    quarter of the limit, at least 15 s) so a 1-minute task still runs before it is stopped."""
    return max(15, min(90, minutes * 60 // 4))


def _slurm_extra(requeues: int, resumed_from: str | None) -> dict[str, Any]:
    env = os.environ
    job_id = env.get("SLURM_JOB_ID")
    if env.get("SLURM_ARRAY_JOB_ID"):
        job_id = f"{env['SLURM_ARRAY_JOB_ID']}_{env.get('SLURM_ARRAY_TASK_ID', '')}"
    return {
        "job_id": job_id,
        "node": env.get("SLURMD_NODENAME"),
        "partition": env.get("SLURM_JOB_PARTITION"),
        "requeues": requeues,
        "resumed_from": resumed_from,
    }


class SlurmTrial:
    """The callable submitit pickles into each array task: one attempt at one trial, and the
    ``checkpoint`` submitit calls on SIGUSR2 (time limit near, or preempted)."""

    def __init__(self, job: TrialJob, requeues: int = 0, resume_dir: str | None = None) -> None:
        self.job, self.requeues, self.resume_dir = job, requeues, resume_dir
        self._pid: int | None = None
        self._thread: threading.Thread | None = None
        self._result: list[AttemptOutcome] = []
        # set by the attempt's thread as it ends. Both waits poll it with time.sleep, never Thread.join: SIGUSR2's
        # handler (checkpoint) runs in the main thread, and when it interrupts a join between the thread's end lock
        # being taken and released, is_alive() and join() in the handler wait on that same lock forever (seen in CI:
        # "Calling checkpoint method." and nothing until Slurm killed the task at its limit)
        self._ended = False

    def __getstate__(self) -> dict[str, Any]:  # a checkpoint pickles the next attempt, not this one's thread
        return {"job": self.job, "requeues": self.requeues, "resume_dir": self.resume_dir}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["job"], state["requeues"], state["resume_dir"])  # type: ignore[misc]

    def _attempt_job(self) -> TrialJob:
        extra = {**self.job.extra_record, "slurm": _slurm_extra(self.requeues, self.resume_dir)}
        env = dict(self.job.env)
        if self.resume_dir is not None:
            env["EXPKIT_RESUME_DIR"] = self.resume_dir
        return dataclasses.replace(self.job, env=env, extra_record=extra)

    def __call__(self) -> AttemptOutcome:
        """Run the attempt in a thread, so the main thread (where SIGUSR2's handler runs) stays free."""
        job = self._attempt_job()

        def remember(pid: int) -> None:
            self._pid = pid

        def run() -> None:
            try:
                self._result.append(_execute_job(job, remember))
            except Exception as exc:  # noqa: BLE001 - the command could not start: a failed attempt
                self._result.append(AttemptOutcome("failed", None, None, None, 0.0, {}, f"{type(exc).__name__}: {exc}"))
            finally:
                self._ended = True

        self._thread = threading.Thread(target=run, name="expkit-slurm-trial")
        self._thread.start()
        while not self._ended:
            time.sleep(POLL_S)  # holds no lock: the signal handler may run here and wait for the thread itself
        self._thread.join()
        res = self._result[0]
        if res.status == "killed" and res.run_dir is not None:  # not by checkpoint (that one does not return)
            _mark_killed_by_slurm(Path(res.run_dir), res.error)
        return res

    def checkpoint(self) -> Any:
        """Stop the command (SIGTERM, SIGKILL after STOP_GRACE_S), mark its run requeued, and hand submitit
        the next attempt, which resumes from this run's directory (``EXPKIT_RESUME_DIR``)."""
        import signal

        import submitit

        if self._thread is None:  # signalled before the attempt started: run it again as it was
            return submitit.helpers.DelayedSubmission(SlurmTrial(self.job, self.requeues + 1, self.resume_dir))
        deadline = time.monotonic() + STOP_GRACE_S
        sent: set[int] = set()
        while not self._ended:  # not is_alive()/join(): see _ended
            sig = signal.SIGKILL if time.monotonic() > deadline else signal.SIGTERM
            if self._pid is not None and sig not in sent:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._pid, sig)
                sent.add(sig)
            time.sleep(POLL_S)
        res = self._result[0] if self._result else None
        if res is not None and res.status == "finished":  # it ended before the signal: hand back its outcome
            return submitit.helpers.DelayedSubmission(_Finished(res))
        run_dir = res.run_dir if res is not None else None
        if self.requeues >= MAX_REQUEUES:
            return None  # submitit then ends the task (UncompletedJobError): the driver sees it lost
        if run_dir is not None:
            _mark_requeued(Path(run_dir), self.requeues + 1)
        return submitit.helpers.DelayedSubmission(SlurmTrial(self.job, self.requeues + 1, run_dir or self.resume_dir))


@dataclasses.dataclass(frozen=True)
class _Finished:
    """What a requeued task runs when its trial had finished as Slurm's signal came: its outcome, not the
    command again (submitit can only requeue from the signal handler)."""

    outcome: AttemptOutcome

    def __call__(self) -> AttemptOutcome:
        return self.outcome


def _mark_requeued(run_dir: Path, next_attempt: int) -> None:
    _mark_run(
        run_dir,
        f"Slurm signalled the task (time limit near, or preempted): requeued; requeue {next_attempt} runs the "
        "command again with EXPKIT_RESUME_DIR set to this run's directory",
        unexplained_only=False,
    )


def _mark_killed_by_slurm(run_dir: Path, error: str | None) -> None:
    """Say why a run ended ``killed`` when no requeue signal came first: Slurm killed the task itself (its
    time limit passed before its warning signal was handled: Slurm checks limits every 30 s or so and may
    signal late under load), or ``scancel``, or the node. The sweep's retry then runs the trial again."""
    _mark_run(
        run_dir,
        f"the command was killed ({error or 'a signal'}) by no requeue of expkit's: Slurm's time limit passed "
        "before its warning signal was handled, or scancel, or the node ended the task",
        unexplained_only=True,
    )


def _mark_run(run_dir: Path, reason: str, *, unexplained_only: bool) -> None:
    """Mark the attempt's run ``killed`` with ``reason``: any run that did not finish, or (``unexplained_only``)
    only a killed run whose record gives no reason yet. A record that cannot be read stays as execute left it."""
    from expkit.runs.store import read_record, write_record

    try:
        rec = read_record(run_dir)
    except Exception:  # noqa: BLE001 - the run stays as execute left it
        return
    if rec.status == "finished" or (unexplained_only and (rec.status != "killed" or rec.status_reason)):
        return
    write_record(run_dir.parent, dataclasses.replace(rec, status="killed", status_reason=reason))


@dataclasses.dataclass(eq=False)
class _Handle:
    """One trial handed to the backend: submitted with the next array, then its submitit job."""

    trial: SlurmTrial
    job: Any = None
    gone_since: float | None = None

    def __hash__(self) -> int:
        return id(self)


class SlurmBackend:
    """Trials as Slurm array tasks (see the module's docstring). ``partition`` None: the cluster's default."""

    name = "slurm"

    def __init__(
        self,
        *,
        partition: str | None,
        time_limit: str | None,
        array_parallelism: int,
        cpus_per_trial: float,
        gpus_per_trial: float,
    ) -> None:
        try:
            import submitit  # noqa: F401 - checked here, used when the first array is submitted
        except ImportError:
            raise MissingDependency("the Slurm backend needs submitit", hint="pip install 'expkit[slurm]'") from None
        minutes = parse_time_limit(time_limit or DEFAULT_TIME)
        if gpus_per_trial != int(gpus_per_trial):
            raise UsageError(f"gpus_per_trial {gpus_per_trial} must be a whole number on Slurm")
        self.params: dict[str, Any] = {
            "time": minutes,
            "signal_delay_s": _signal_delay_s(minutes),
            "cpus_per_task": max(1, math.ceil(cpus_per_trial)),
            "array_parallelism": array_parallelism,
            "nodes": 1,
            "ntasks_per_node": 1,
            "job_name": "expkit-sweep",
        }
        if partition:
            self.params["partition"] = partition
        if gpus_per_trial:
            self.params["gpus_per_node"] = int(gpus_per_trial)
        self.max_parallel = array_parallelism
        self._pending: list[_Handle] = []
        self._executor: Any = None
        self._states: dict[str, str] | None = None
        self._states_at = 0.0

    @staticmethod
    def folder_of(store: str) -> Path:
        """submitit's folder pattern ``<store>/.backends/slurm/%j`` (on the store's shared filesystem)."""
        return Path(store).joinpath(*BACKEND_FOLDER) / "%j"

    def _executor_for(self, store: str) -> Any:
        """submitit's executor, its folder ``folder_of(store)``."""
        import submitit

        if self._executor is None:
            self._executor = submitit.SlurmExecutor(folder=self.folder_of(store), max_num_timeout=MAX_REQUEUES)
            self._executor.update_parameters(**self.params)
        return self._executor

    def submit(self, job: TrialJob) -> Hashable:
        handle = _Handle(SlurmTrial(job))
        self._pending.append(handle)
        return handle

    def _flush(self) -> None:
        """Submit what was handed over since the last flush as one array (sbatch)."""
        if not self._pending:
            return
        self._states = None  # new jobs: ask squeue afresh
        pending, self._pending = self._pending, []
        try:
            executor = self._executor_for(pending[0].trial.job.store)
            with executor.batch():
                jobs = [executor.submit(h.trial) for h in pending]
        except Exception as exc:  # noqa: BLE001 - sbatch refused (partition, limits): every trial fails with its words
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
            for h in pending:
                h.job = _Refused(f"sbatch refused the array: {why}")
            return
        for h, j in zip(pending, jobs, strict=True):
            h.job = j

    def ref_of(self, handle: Hashable) -> str | None:
        """The Slurm job id of a submitted trial (``123_4`` for an array task); None before its array went to
        sbatch, or when sbatch refused it."""
        job = handle.job if isinstance(handle, _Handle) else None
        return None if job is None or isinstance(job, _Refused) else str(job.job_id)

    def adopt(self, ref: str, job: TrialJob) -> Hashable | None:
        """A handle on job ``ref`` that an earlier driver submitted, when squeue still lists it pending or running
        (its result will appear in submitit's folder); None when it has ended or Slurm forgot it (then the
        trial is submitted again: one that finished has a finished run, and is not asked about).

        Raises:
            UsageError: squeue did not answer, so whether the job still runs is unknown.
        """
        import submitit

        states = _squeue([ref.split("_")[0]])
        if states is None:
            raise UsageError(
                f"cannot tell whether Slurm job {ref} of this sweep still runs: squeue did not answer",
                hint="resume when the controller answers (scontrol ping); resuming blind would run trials twice",
            )
        state = states.get(ref)
        if state is None or state in _END_STATES:
            return None
        return _Handle(SlurmTrial(job), job=submitit.SlurmJob(folder=self.folder_of(job.store), job_id=ref))

    def _squeue_states(self, handles: list[_Handle]) -> dict[str, str] | None:
        """Job id -> Slurm state of the handles' jobs (``squeue``, at most once per SQUEUE_EVERY_S: a
        cluster's controller is shared); None when squeue did not answer (then nothing is judged gone)."""
        now = time.monotonic()
        if self._states is not None and now - self._states_at < SQUEUE_EVERY_S:
            return self._states
        states = _squeue(sorted({str(h.job.job_id).split("_")[0] for h in handles}))
        if states is not None:
            self._states, self._states_at = states, now
        return states

    def _ended(self, handles: list[_Handle]) -> list[_Handle]:
        """Handles whose result file is there, or whose job left squeue (or ended there) RESULT_GRACE_S ago
        without one (Slurm ended it: out of memory, node failure, cancelled, out of requeues)."""
        done = [h for h in handles if isinstance(h.job, _Refused) or h.job.paths.result_pickle.exists()]
        waiting = [h for h in handles if h not in done]
        if not waiting:
            return done
        states = self._squeue_states(waiting)
        if states is None:
            return done
        now = time.monotonic()
        for h in waiting:
            state = states.get(str(h.job.job_id))
            if state is None or state in _END_STATES:
                h.gone_since = h.gone_since or now
                if now - h.gone_since > RESULT_GRACE_S:
                    done.append(h)
            else:
                h.gone_since = None
        return done

    def wait(self, handles: list[Hashable], timeout_s: float) -> list[Hashable]:
        self._flush()
        deadline = time.monotonic() + timeout_s
        mine = [h for h in handles if isinstance(h, _Handle)]
        while True:
            ended = self._ended(mine)
            if ended or time.monotonic() >= deadline:
                return list(ended)
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))

    def outcome(self, handle: Hashable) -> AttemptOutcome:
        assert isinstance(handle, _Handle)
        job = handle.job
        if isinstance(job, _Refused):
            return AttemptOutcome("failed", None, None, None, 0.0, {}, job.error)
        if not job.paths.result_pickle.exists():
            return AttemptOutcome(
                "lost",
                None,
                None,
                None,
                0.0,
                {},
                f"Slurm job {job.job_id} ended without a result (see {job.paths.stderr})",
            )
        try:
            result = job.result()
        except Exception as exc:  # noqa: BLE001 - submitit's FailedJobError / UncompletedJobError
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            status = "lost" if type(exc).__name__ == "UncompletedJobError" else "failed"
            return AttemptOutcome(status, None, None, None, 0.0, {}, f"Slurm job {job.job_id}: {lines[-1][:300]}")
        assert isinstance(result, AttemptOutcome)
        return result

    def pid_of(self, handle: Hashable) -> int | None:
        return None

    def cancel(self, handles: list[Hashable]) -> None:
        """``scancel`` the trials' tasks (Slurm sends SIGTERM, then SIGKILL after its KillWait)."""
        for h in handles:
            if isinstance(h, _Handle) and h.job is not None and not isinstance(h.job, _Refused):
                try:
                    h.job.cancel(check=False)
                except Exception:  # noqa: BLE001,S112 - already ended
                    continue
        self._pending = [h for h in self._pending if h not in handles]

    def close(self) -> None:
        self._pending = []


def _squeue(ids: list[str]) -> dict[str, str] | None:
    """Job id (``123_4`` for array tasks) -> Slurm state of the jobs ``ids``; None when squeue did not answer."""
    try:
        res = subprocess.run(
            ["squeue", "-h", "-r", "-o", "%i %T", "-j", ",".join(ids)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    # squeue exits 1 for ids it no longer knows (past MinJobAge): those are gone, not a failure
    if res.returncode != 0 and "Invalid job id" not in res.stderr:
        return None
    return dict(line.split()[:2] for line in res.stdout.splitlines() if len(line.split()) >= 2)


@dataclasses.dataclass(frozen=True)
class _Refused:
    """Stands for the submitit job of a trial sbatch refused."""

    error: str


def check_slurm_reachable(partition: str | None, *, timeout_s: float = 15.0) -> None:
    """Refuse before anything is submitted when no Slurm controller answers here, or the partition is not one
    of the cluster's (``sinfo`` lists them, the default with a ``*``).

    Raises:
        UsageError: ``sbatch``/``sinfo`` are not on PATH, ``sinfo`` fails or does not answer, or the partition
            is unknown.
    """
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        raise UsageError(
            "no Slurm here: sbatch and sinfo are not on PATH",
            hint="submit from a login node of the cluster (or one whose slurm.conf points at its controller)",
        )
    try:
        r = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(f"no Slurm controller answered sinfo within {timeout_s:.0f} s") from None
    if r.returncode != 0:
        said = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise UsageError(
            f"no Slurm controller answers here: sinfo said {said!r}",
            hint="check SLURM_CONF / slurm.conf and that slurmctld runs (scontrol ping)",
        )
    partitions = [p.rstrip("*") for p in r.stdout.split()]
    if partition is not None and partition not in partitions:
        raise UsageError(f"partition {partition!r} is not one of this cluster's: {', '.join(partitions) or 'none'}")


def make_slurm_backend(settings: BackendSettings) -> SlurmBackend:
    """Slurm array tasks (submitit): ``partition`` (default: the cluster's), ``time_limit`` per trial
    (default 01:00:00), ``max_parallel`` trials handed to Slurm at once (default 256), CPUs and whole GPUs per
    trial. No ``address``: the cluster is the one ``sbatch`` here submits to."""
    if settings.address:
        raise UsageError(f"address {settings.address!r} is for Ray; the slurm backend submits with sbatch")
    check_slurm_reachable(settings.partition)
    return SlurmBackend(
        partition=settings.partition,
        time_limit=settings.time_limit,
        array_parallelism=settings.max_parallel or DEFAULT_PARALLEL,
        cpus_per_trial=settings.cpus_per_trial,
        gpus_per_trial=settings.gpus_per_trial,
    )
