"""``run_sweep``: every trial of a plan as a recorded run, on a backend, with retries, cancel and resume.

Faults, and what the sweep does about each:

- a trial's command fails (non-zero exit): its run is ``failed`` with the last lines of stderr (the
  traceback); the other trials go on; not retried (a failing command fails again);
- a trial's process is killed by a signal the sweep did not send (SIGKILL, the OOM killer), or a Ray worker
  dies: that run is ``killed`` (or ``lost``) and the trial runs again, up to ``max_retries`` more times;
  the retry's run lists the attempts before it (``extra["sweep"]["earlier_attempts"]``: attempt, status,
  run id, error), also when the dead attempt left no run behind;
- Ctrl-C (SIGINT) or SIGTERM to the sweep: no new trial starts, running ones get SIGTERM (SIGKILL after
  10 s) and their runs are marked ``killed``; the result says how to resume;
- ``resume``: trials whose run (by name, ``<group>-tNNN``) finished or was stopped early are skipped; the rest
  run. Nothing that finished runs twice. The backend and its settings come from the sweep's plan file (a
  conflicting backend or setting is refused). A trial handed to a backend whose jobs outlive the driver
  (Slurm) is in ``<group>.sweep.jobs.jsonl`` with its job id from the moment it was submitted: a resume after
  the driver was killed (``kill -9``) adopts the jobs still queued or running (waits for them and takes their
  result) and submits only the trials that never ran or ended unfinished. Ray's task ids are recorded too; a
  Ray task dies with the driver that owns it (and its command with it: ``execute``'s parent-death signal), so
  its trial runs again.
- trials start round-robin by seed, the configs in a seeded shuffle recorded in the plan
  (``SweepPlan.start_order``): early stopping sees every config at a rung before a second seed of any.

Early stopping (``SweepRequest.early_stop``, an ``EarlyStopPolicy``): the driver reads each running trial's
metrics as it logs them (``expkit.sweep.stopper``) and applies the seed-aware rule at each rung; a config the
rule stops has its running trials cancelled (the backend's ``cancel``) and its other seeds never started.
Their runs say ``stopped`` (not failed) with the decision (rung, metric, interval, leader) in
``extra["early_stop"]``; runs of that config that had already finished keep ``finished`` and get the
decision too (``config_stopped``), so ``compare`` leaves the whole config out.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import ExpkitError
from expkit.runs.store import RunSummary, list_runs, read_record, resolve_store, write_json_atomic, write_record
from expkit.sweep.backends import AttemptOutcome, BackendSettings, SweepBackend, TrialJob, make_backend
from expkit.sweep.early_stop import EarlyStopPolicy, RungDecision
from expkit.sweep.plan import SweepPlan, Trial, plan_path, read_plan, write_plan
from expkit.sweep.stopper import EarlyStopper, config_key, decision_record

__all__ = [
    "EarlyStopSummary",
    "SweepInterrupted",
    "SweepProgress",
    "SweepRequest",
    "SweepResult",
    "TrialOutcome",
    "run_sweep",
]

POLL_S = 0.25  # how often the driver looks at running trials (and notices Ctrl-C)
CANCEL_REASON = "cancelled: the sweep was interrupted (Ctrl-C or SIGTERM)"
DONE = ("finished", "done before", "stopped")  # a trial in one of these states is not run again


@dataclass(frozen=True)
class TrialOutcome:
    """How a trial ended after all its attempts. ``status``: finished, failed, killed (cancelled), lost
    (killed by a signal or a dead worker on every attempt), done before (finished in an earlier sweep of
    this group; ``resume``), stopped (its config was stopped early: cancelled, or never started, then
    ``attempts`` is 0; ``error`` says why), or not started (cancelled before its turn)."""

    index: int
    label: str
    config: dict[str, Any]
    seed: int
    status: str
    attempts: int
    run_id: str | None
    exit_code: int | None
    elapsed_s: float
    final_metrics: dict[str, Any]
    error: str | None


@dataclass(frozen=True)
class SweepProgress:
    """Counts after each event, for a progress bar: ``event`` is one line on what just happened."""

    total: int
    finished: int
    running: int
    failed: int
    retried: int
    event: str


@dataclass(frozen=True)
class EarlyStopSummary:
    """The early-stopping rule of a sweep and the decision that stopped each stopped config."""

    policy: EarlyStopPolicy
    stopped: tuple[RungDecision, ...]


@dataclass(frozen=True)
class SweepResult:
    group: str
    store: str
    backend: str
    max_parallel: int
    threads_per_trial: int | None
    n_trials: int
    outcomes: tuple[TrialOutcome, ...]
    cancelled: bool
    elapsed_s: float
    resume_command: str
    config_passing: str
    early_stop: EarlyStopSummary | None = None

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes:
            out[o.status] = out.get(o.status, 0) + 1
        return out

    @property
    def complete(self) -> bool:
        """Every trial has a finished run (now or before) or was stopped early."""
        return all(o.status in DONE for o in self.outcomes)

    def __json__(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "counts": self.counts, "complete": self.complete}

    def raise_unless_complete(self) -> None:
        """Raise SweepInterrupted when Ctrl-C/SIGTERM stopped the sweep, CheckFailed when some trial did
        not finish; return when every trial has a finished run."""
        from expkit.errors import CheckFailed

        if self.cancelled:
            raise SweepInterrupted(
                "interrupted: running trials were stopped and marked killed", hint=f"resume with: {self.resume_command}"
            )
        bad = [o for o in self.outcomes if o.status not in DONE]
        if bad:
            kinds = ", ".join(sorted({o.status for o in bad}))
            raise CheckFailed(
                f"{len(bad)} of {self.n_trials} trials did not finish ({kinds})",
                hint=f"see each run's output.log; rerun the unfinished ones with: {self.resume_command}",
            )


class SweepInterrupted(ExpkitError):
    """Ctrl-C or SIGTERM stopped a sweep (its running trials were marked killed); exit code 130 as a shell
    gives a process ended by SIGINT."""

    exit_code = 130


def _done_runs(root: Path, group: str) -> dict[str, RunSummary]:
    """Run name -> the finished (or stopped early) run of ``group`` under that name (listing also turns
    dead ``running`` into lost)."""
    listing = list_runs(root, where=[f"group={group}"])
    return {r.name: r for r in listing.runs if r.name and r.status in ("finished", "stopped")}


def _mark_killed(run_dir: str | None, reason: str) -> None:
    """A cancelled trial's run says ``killed`` whatever its command made of the signal (exit 130 ...)."""
    if not run_dir:
        return
    path = Path(run_dir)
    try:
        rec = read_record(path)
    except Exception:  # noqa: BLE001 - nothing to correct
        return
    if rec.status in ("finished", "killed"):
        return
    write_record(path.parent, dataclasses.replace(rec, status="killed", status_reason=reason))


def _mark_cancelled_runs(root: Path, group: str, names: set[str], reason: str) -> None:
    """Runs of cancelled trials that no result came back for (a Ray worker stopped before ``execute``
    wrote the end of the run): still ``running`` or already ``lost``; they were killed by the cancel."""
    if not names:
        return
    for r in list_runs(root, where=[f"group={group}"]).runs:
        if r.name in names and r.status in ("running", "lost"):
            _mark_killed(str(root / r.id), reason)


def _resume_command(group: str, store_arg: str | os.PathLike[str] | None, root: Path) -> str:
    cmd = f"expkit sweep --resume {group}"
    if store_arg is not None or os.environ.get("EXPKIT_STORE"):
        cmd += f" --store {root}"
    return cmd


@dataclass(frozen=True)
class SweepRequest:
    """A sweep to run: a new ``plan`` or, with ``resume=GROUP``, the unfinished trials of an earlier one.

    Attributes:
        plan: from ``plan_sweep``; written to ``<store>/groups/<group>.sweep.json`` for a later resume.
        resume: the group of an earlier sweep in this store; its plan is read back.
        store: the run store (default ``$EXPKIT_STORE`` or ``./runs``); with Ray, on a shared filesystem.
        backend: a name in ``expkit.sweep.backends.BACKENDS`` (``local``: processes here; ``ray``; ``slurm``);
            None: ``local`` for a new sweep, the recorded one on a resume (another name is refused).
        settings: parallelism, cluster address and per-trial CPUs/GPUs (see BackendSettings); the
            per-trial CPUs are also each trial's ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``. Recorded in the plan
            file; on a resume the fields left at their defaults take the recorded values, ``max_parallel`` may
            change, and any other field set to a value that differs from the recorded one is refused.
        max_retries: extra attempts for a trial whose process was killed or whose worker died.
        early_stop: the seed-aware early-stopping rule to apply at its rungs (None: every trial runs to its
            end). Kept beside the plan; a resume without one continues with the sweep's own.
    """

    plan: SweepPlan | None = None
    resume: str | None = None
    store: str | os.PathLike[str] | None = None
    backend: str | None = None
    settings: BackendSettings | None = None
    max_retries: int = 1
    early_stop: EarlyStopPolicy | None = None


def _policy_path(root: Path, group: str) -> Path:
    return plan_path(root, group).with_suffix(".early_stop.json")


def _stopped_path(root: Path, group: str) -> Path:
    """Config -> the decision that stopped it, written when the rule stops a config: a resume keeps the config
    stopped even when none of its runs could be marked (a trial cancelled before its run was found)."""
    return plan_path(root, group).with_suffix(".stopped.json")


def _read_stopped(root: Path, group: str) -> dict[str, RungDecision]:
    import orjson

    path = _stopped_path(root, group)
    if not path.exists():
        return {}
    return {k: _decision_of(d) for k, d in orjson.loads(path.read_bytes()).items()}


def _decision_of(saved: dict[str, Any]) -> RungDecision:
    """A decision back from its JSON (``<group>.sweep.stopped.json`` or a run's ``extra.early_stop``)."""
    return RungDecision(**{f: saved.get(f) for f in _DECISION_FIELDS})  # type: ignore[arg-type]  # JSON values


def _policy_of(request: SweepRequest, root: Path, group: str) -> EarlyStopPolicy | None:
    """The request's early-stopping rule, written beside the plan; on a resume without one, the one there."""
    import orjson

    path = _policy_path(root, group)
    if request.early_stop is not None:
        write_json_atomic(path, dataclasses.asdict(request.early_stop))
        return request.early_stop
    if request.resume is None or not path.exists():
        path.unlink(missing_ok=True)  # a new sweep without the rule: no earlier sweep's rule applies to it
        return None
    return EarlyStopPolicy.from_record(orjson.loads(path.read_bytes()))


_DECISION_FIELDS = tuple(f.name for f in dataclasses.fields(RungDecision))


def _backend_of(request: SweepRequest, root: Path, group: str) -> tuple[str, BackendSettings]:
    """The backend and settings to run on: the request's for a new sweep; on a resume the ones the plan file
    recorded, with ``max_parallel`` and unset fields from the request (issue 34 item 2: a Slurm sweep resumed
    without ``--backend`` ran on the local machine).

    Raises:
        UsageError: a resume whose backend or a setting conflicts with the recorded one.
    """
    from expkit.errors import UsageError

    given = request.settings or BackendSettings()
    recorded = read_backend(root, group) if request.resume is not None else None
    if recorded is None:  # a new sweep, or a plan written before backends were recorded
        return request.backend or "local", given
    name, saved = recorded
    where = plan_path(root, group)
    if request.backend is not None and request.backend != name:
        raise UsageError(
            f"backend {request.backend!r} conflicts with the backend sweep {group!r} ran on: {name!r} ({where})",
            hint="resume without a backend to continue where it ran, or start a new sweep under another name",
        )
    default = BackendSettings()
    merged: dict[str, Any] = {}
    for f in dataclasses.fields(BackendSettings):
        mine, theirs = getattr(given, f.name), getattr(saved, f.name)
        if f.name == "max_parallel" or mine == getattr(default, f.name) or mine == theirs:
            merged[f.name] = theirs if mine == getattr(default, f.name) else mine
            continue
        raise UsageError(
            f"{f.name} {mine!r} conflicts with the {f.name} sweep {group!r} ran with: {theirs!r} ({where})",
            hint="resume without it to keep the recorded value, or start a new sweep under another name",
        )
    return name, BackendSettings(**merged)


def read_backend(root: Path, group: str) -> tuple[str, BackendSettings] | None:
    """The backend name and settings a sweep of ``group`` recorded in its plan file (None: none recorded)."""
    import orjson

    path = plan_path(root, group)
    saved = orjson.loads(path.read_bytes()).get("backend") if path.exists() else None
    if not saved:
        return None
    known = {f.name for f in dataclasses.fields(BackendSettings)}
    return str(saved["name"]), BackendSettings(**{k: v for k, v in saved["settings"].items() if k in known})


def _record_backend(root: Path, plan: SweepPlan, name: str, settings: BackendSettings) -> None:
    write_json_atomic(
        plan_path(root, plan.group),
        {**plan.to_json(), "backend": {"name": name, "settings": dataclasses.asdict(settings)}},
    )


def _jobs_path(root: Path, group: str) -> Path:
    """``<group>.sweep.jobs.jsonl``: one line per attempt handed to a backend that names it (Slurm job id, Ray
    task id), written as soon as the backend has the id."""
    return plan_path(root, group).with_suffix(".jobs.jsonl")


def _read_jobs(root: Path, group: str) -> dict[int, dict[str, Any]]:
    """Trial index -> its last recorded job (a torn last line from a killed driver is skipped)."""
    import orjson

    path = _jobs_path(root, group)
    out: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return out
    for line in path.read_bytes().splitlines():
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        out[int(row["trial"])] = row
    return out


def _not_started(trial: Trial) -> TrialOutcome:
    return TrialOutcome(trial.index, trial.label, trial.config, trial.seed, "not started", 0, None, None, 0.0, {}, None)


def _open_plan(request: SweepRequest, root: Path) -> tuple[SweepPlan, dict[str, RunSummary]]:
    """The plan to run and the runs of its trials that finished (or were stopped) before (a resume), by
    run name."""
    from expkit.errors import UsageError

    if request.plan is None:
        assert request.resume is not None
        plan = read_plan(root, request.resume)
        return plan, _done_runs(root, plan.group)
    plan = request.plan
    done = _done_runs(root, plan.group) if root.exists() else {}
    if done:
        raise UsageError(
            f"group {plan.group!r} already has {len(done)} finished runs in {root}",
            hint=f"continue it with resume={plan.group!r} or choose another group name",
        )
    write_plan(root, plan)
    _stopped_path(root, plan.group).unlink(missing_ok=True)  # a new sweep: no earlier sweep's stops apply to it
    _jobs_path(root, plan.group).unlink(missing_ok=True)
    return plan, done


class _SweepLoop:
    """The state of one sweep while it runs: the queue of (trial, attempt), what is in flight on the
    backend, the outcomes so far, and the counts reported after every event."""

    def __init__(
        self,
        plan: SweepPlan,
        root: Path,
        backend: SweepBackend,
        request: SweepRequest,
        on_progress: Callable[[SweepProgress], None] | None,
        policy: EarlyStopPolicy | None = None,
    ) -> None:
        self.plan, self.root, self.be, self.on_progress = plan, root, backend, on_progress
        self.stopper = EarlyStopper(policy, root, plan.group) if policy is not None else None
        self.max_retries = request.max_retries
        self.threads = max(1, int((request.settings or BackendSettings()).cpus_per_trial))
        self.base_env = {"OMP_NUM_THREADS": str(self.threads), "MKL_NUM_THREADS": str(self.threads)}
        self.cwd = str(Path.cwd())
        self.outcomes: dict[int, TrialOutcome] = {}
        self.queue: deque[tuple[Trial, int]] = deque()
        self.inflight: dict[Hashable, tuple[Trial, int]] = {}
        self.counts = {"finished": 0, "failed": 0, "retried": 0}
        self.unreported: set[str] = set()  # cancelled trials whose run id never came back
        self.earlier: dict[int, list[dict[str, Any]]] = {}  # trial index -> its attempts that were retried
        self.unjournaled: list[Hashable] = []  # submitted handles whose job id is not in the jobs file yet

    def skip_done(self, done: dict[str, RunSummary]) -> None:
        """Trials that finished in an earlier sweep are ``done before``, those stopped early ``stopped``
        (their config stays stopped); the rest are queued. With early stopping, the finished trials' values
        at the rungs go back into the rule's table."""
        stopped_configs: dict[str, RungDecision] = {}
        for t in self.plan.trials:
            run = done.get(t.run_name(self.plan.group))
            if run is None:
                continue
            status = "done before" if run.status == "finished" else "stopped"
            self.outcomes[t.index] = TrialOutcome(
                t.index, t.label, t.config, t.seed, status, 0, run.id, 0, 0.0, {}, run.status_reason
            )
            if self.stopper is not None and run.status == "finished":
                self.stopper.add_finished(t, self.root / run.id)
            elif self.stopper is not None:
                found = read_record(self.root / run.id).extra.get("early_stop") or {}
                stopped_configs[config_key(t)] = _decision_of(found)
        if self.stopper is not None:
            self.stopper.table.stopped.update(stopped_configs | _read_stopped(self.root, self.plan.group))
        self.queue.extend((t, 1) for t in self.plan.start_order() if t.index not in self.outcomes)

    def adopt_submitted(self) -> None:
        """A resume: the queued trials whose job (from the jobs file) the backend still has queued or running are
        put in flight again, not submitted a second time (issue 34 item 1)."""
        adopt = getattr(self.be, "adopt", None)
        jobs = _read_jobs(self.root, self.plan.group)
        if adopt is None or not jobs:
            return
        kept: deque[tuple[Trial, int]] = deque()
        for trial, attempt in self.queue:
            row = jobs.get(trial.index)
            handle = adopt(row["ref"], self.job_of(trial, attempt)) if row and row["backend"] == self.be.name else None
            if row is None or handle is None:
                kept.append((trial, attempt))
                continue
            self.inflight[handle] = (trial, int(row["attempt"]))
            if self.stopper is not None:
                self.stopper.start(trial)
            self.report(f"{trial.label}: adopted {self.be.name} job {row['ref']} (submitted before the resume)")
        self.queue = kept

    def journal(self) -> None:
        """Append the job ids the backend now has for the submitted handles to the jobs file."""
        ref_of = getattr(self.be, "ref_of", None)
        if ref_of is None or not self.unjournaled:
            return
        lines, waiting = [], []
        for h in self.unjournaled:
            if h not in self.inflight:
                continue
            ref = ref_of(h)
            if ref is None:
                waiting.append(h)
                continue
            trial, attempt = self.inflight[h]
            lines.append(
                orjson.dumps({"trial": trial.index, "attempt": attempt, "backend": self.be.name, "ref": ref}) + b"\n"
            )
        self.unjournaled = waiting
        if lines:
            with open(_jobs_path(self.root, self.plan.group), "ab") as f:
                f.write(b"".join(lines))
                f.flush()
                os.fsync(f.fileno())

    def report(self, event: str) -> None:
        if self.on_progress is None:
            return
        before = sum(1 for o in self.outcomes.values() if o.status == "done before")
        self.on_progress(
            SweepProgress(
                len(self.plan.trials),
                self.counts["finished"] + before,
                len(self.inflight),
                self.counts["failed"],
                self.counts["retried"],
                event,
            )
        )

    def job_of(self, trial: Trial, attempt: int) -> TrialJob:
        plan = self.plan
        sweep = {
            "group": plan.group,
            "trial": trial.index,
            "label": trial.label,
            "attempt": attempt,
            "backend": self.be.name,
            "config": trial.config,
            "seed_passing": plan.seed_passing,
            "earlier_attempts": self.earlier.get(trial.index, []),
        }
        return TrialJob(
            command=tuple(plan.command_of(trial)),
            store=str(self.root),
            group=plan.group,
            name=trial.run_name(plan.group),
            seed=trial.seed,
            config=trial.config,
            env={**self.base_env, **plan.env_of(trial)},
            cwd=self.cwd,
            extra_record={"sweep": sweep},
        )

    def settle(self, trial: Trial, attempt: int, res: AttemptOutcome, cancelled: bool) -> None:
        """Record how an attempt ended, or queue the trial again (killed or lost, retries left)."""
        status = res.status
        if cancelled and status not in ("finished", "not started"):
            _mark_killed(res.run_dir, CANCEL_REASON)
            if res.run_dir is None:
                self.unreported.add(trial.run_name(self.plan.group))
            status = "killed"
        elif status in ("killed", "lost"):
            if attempt <= self.max_retries:
                self.counts["retried"] += 1
                self.earlier.setdefault(trial.index, []).append(
                    {"attempt": attempt, "status": status, "run_id": res.run_id, "error": res.error}
                )
                self.queue.append((trial, attempt + 1))
                why = res.error or "no result"
                self.report(f"{trial.label}: {status} ({why}), retry {attempt}/{self.max_retries}")
                return
            status = "lost"
        self.outcomes[trial.index] = TrialOutcome(
            trial.index,
            trial.label,
            trial.config,
            trial.seed,
            status,
            attempt,
            res.run_id,
            res.exit_code,
            res.elapsed_s,
            res.final_metrics,
            res.error,
        )
        if status != "not started":
            self.counts["finished" if status == "finished" else "failed"] += 1
        self.report(f"{trial.label}: {status}")

    def run_queue(self) -> None:
        """Keep ``max_parallel`` attempts in flight until the queue is empty and every attempt ended; with
        early stopping, stop each config the rule stops as soon as it does."""
        be = self.be
        while self.queue or self.inflight:
            while self.queue and len(self.inflight) < be.max_parallel:
                trial, attempt = self.queue.popleft()
                if self.stopper is not None and config_key(trial) in self.stopper.stopped:
                    self.skip_stopped(trial)
                    continue
                handle = be.submit(self.job_of(trial, attempt))
                self.inflight[handle] = (trial, attempt)
                self.unjournaled.append(handle)
                if self.stopper is not None:
                    self.stopper.start(trial)
                self.report(f"{trial.label}: started" + (f" (attempt {attempt})" if attempt > 1 else ""))
            newly: list[str] = []
            ended = be.wait(list(self.inflight), POLL_S) if self.inflight else []
            self.journal()  # the backend has submitted what was handed over: its job ids go to the jobs file
            for h in ended:
                trial, attempt = self.inflight.pop(h)
                res = be.outcome(h)
                if self.stopper is not None:
                    newly += self.stopper.end(trial, res.run_dir, finished=res.status == "finished")
                self.settle(trial, attempt, res, cancelled=False)
            if self.stopper is not None:
                for key in dict.fromkeys(newly + self.stopper.poll()):
                    self.stop_config(key)

    def stop_config(self, key: str) -> None:
        """The rule stopped config ``key``: cancel its running trials (their runs marked ``stopped`` with the
        decision), give its finished runs the decision too; its queued trials are skipped as they come up."""
        assert self.stopper is not None
        decision = self.stopper.stopped[key]
        write_json_atomic(
            _stopped_path(self.root, self.plan.group),
            {k: dataclasses.asdict(d) for k, d in self.stopper.stopped.items()},
        )
        self.report(f"{key}: stopped early at {self.stopper.policy.rung_text(decision.rung)} ({decision.reason})")
        handles = [h for h, (t, _) in self.inflight.items() if config_key(t) == key]
        self.be.cancel(handles)
        for h in handles:
            trial, attempt = self.inflight.pop(h)
            res = self.be.outcome(h)
            known = self.stopper.run_dir_of(trial)
            run_dir = res.run_dir or (str(known) if known is not None else None)
            self.stopper.end(trial, None)
            if res.status == "finished":  # it ended on its own before the cancel reached it
                self.settle(trial, attempt, res, cancelled=False)
                continue
            self.outcomes[trial.index] = TrialOutcome(
                trial.index, trial.label, trial.config, trial.seed, "stopped", attempt, res.run_id,
                res.exit_code, res.elapsed_s, res.final_metrics, self.stopped_reason(decision),
            )  # fmt: skip
            self.mark_stopped(run_dir, decision)
        for o in list(self.outcomes.values()):
            trial = self.plan.trials[o.index]
            if config_key(trial) == key and o.status in ("finished", "done before") and o.run_id:
                self.mark_stopped(str(self.root / o.run_id), decision)

    def stopped_reason(self, d: RungDecision) -> str:
        assert self.stopper is not None
        policy = self.stopper.policy
        return (
            f"stopped early at {policy.rung_text(d.rung)}: {policy.judged} minus the leader's ({d.leader}) "
            f"{d.delta:.4g} [{d.low:.4g}, {d.high:.4g}] ({100 * policy.level:g}% t interval; {d.reason})"
        )

    def mark_stopped(self, run_dir: str | None, decision: RungDecision) -> None:
        """The run's record gets the decision; a run that had not finished says ``stopped``."""
        assert self.stopper is not None
        if not run_dir:
            return
        path = Path(run_dir)
        rec = read_record(path)
        stopped = rec.status != "finished"
        extra = {**rec.extra, "early_stop": decision_record(decision, self.stopper.policy, stopped=stopped)}
        changes: dict[str, Any] = {"extra": extra}
        if stopped:
            changes.update(status="stopped", status_reason=self.stopped_reason(decision))
        write_record(path.parent, dataclasses.replace(rec, **changes))

    def skip_stopped(self, trial: Trial) -> None:
        """A queued trial of a stopped config: never started."""
        assert self.stopper is not None
        why = "not started: " + self.stopped_reason(self.stopper.stopped[config_key(trial)])
        self.outcomes[trial.index] = TrialOutcome(
            trial.index, trial.label, trial.config, trial.seed, "stopped", 0, None, None, 0.0, {}, why
        )
        self.report(f"{trial.label}: stopped (not started)")

    def cancel_all(self) -> None:
        """Stop what runs (their runs marked killed) and mark the queued trials not started."""
        handles = list(self.inflight)
        self.be.cancel(handles)
        for h in handles:
            trial, attempt = self.inflight.pop(h)
            self.settle(trial, attempt, self.be.outcome(h), cancelled=True)
        _mark_cancelled_runs(self.root, self.plan.group, self.unreported, CANCEL_REASON)
        while self.queue:
            trial, _ = self.queue.popleft()
            self.outcomes[trial.index] = _not_started(trial)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the sweep the way Ctrl-C does (main thread only: where Python runs signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old_term)


@contextmanager
def _index_kept_open(root: Path) -> Iterator[None]:
    """Hold one connection to the store's SQLite index for the sweep: each trial's record write opens and
    closes its own, and the close of the last connection checkpoints the WAL into the database (~20 ms a
    write, twice a trial, measured); with this one open, those closes do not."""
    import sqlite3

    from expkit.runs.store import open_index

    try:
        con = open_index(root)
    except (sqlite3.Error, OSError):  # the index is a cache: trials still write their records
        yield
        return
    try:
        yield
    finally:
        con.close()


def run_sweep(request: SweepRequest, *, on_progress: Callable[[SweepProgress], None] | None = None) -> SweepResult:
    """Run every trial of ``request.plan`` (or, with ``request.resume=GROUP``, the unfinished trials of
    that sweep).

    Args:
        request: the plan or the group to resume, the store, the backend and its settings, retries.
        on_progress: called after every event with the counts.

    Returns:
        SweepResult; ``cancelled`` when Ctrl-C/SIGTERM stopped it (then ``resume_command`` continues it).

    Raises:
        UsageError: neither or both of plan and resume, a bad setting (see ``make_backend``).
        MissingDependency: ``backend="ray"`` without ray installed.

    Example:
        >>> plan = plan_sweep(["python", "train.py"], group="lr", grid=["lr=1e-3,3e-3"], seeds=4)  # doctest: +SKIP
        >>> run_sweep(SweepRequest(plan)).counts  # doctest: +SKIP
        {'finished': 8}
    """
    from expkit.errors import UsageError

    if (request.plan is None) == (request.resume is None):
        raise UsageError("give a plan to sweep or a group to resume, not both or neither")
    if request.max_retries < 0:
        raise UsageError(f"max_retries {request.max_retries} must be >= 0")
    root = resolve_store(request.store)
    group = request.plan.group if request.plan is not None else str(request.resume)
    with _sweep_lock(root, group):
        return _run_locked(request, root, on_progress)


@contextmanager
def _sweep_lock(root: Path, group: str) -> Iterator[None]:
    """One process at a time runs (or resumes) a sweep of ``group`` in a store: an exclusive ``flock`` on
    ``<store>/groups/<group>.sweep.lock``, released when the process ends however it ends (two concurrent
    ``--resume`` used to run every unfinished trial twice)."""
    import fcntl

    from expkit.errors import UsageError
    from expkit.sweep.plan import plan_path

    path = plan_path(root, group).with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise UsageError(
                f"sweep {group!r} is already running in {root} ({holder})",
                hint="wait for it to end, or stop it (Ctrl-C) and resume once",
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_locked(request: SweepRequest, root: Path, on_progress: Callable[[SweepProgress], None] | None) -> SweepResult:
    plan, done = _open_plan(request, root)
    name, settings = _backend_of(request, root, plan.group)
    request = dataclasses.replace(request, backend=name, settings=settings)
    be = make_backend(name, settings)
    _record_backend(root, plan, name, settings)
    policy = _policy_of(request, root, plan.group)
    if policy is not None:
        _warm_imports()  # the first stop decision must not wait for scipy's first import (issue 34 item 5)
    loop = _SweepLoop(plan, root, be, request, on_progress, policy)
    loop.skip_done(done)
    loop.adopt_submitted()
    t0 = time.perf_counter()
    cancelled = False
    with _sigterm_as_interrupt(), _index_kept_open(root):
        try:
            loop.report(
                f"{len(loop.queue)} trials to run ({len(loop.outcomes)} finished before) on the {be.name} backend, "
                f"{be.max_parallel} at a time, OMP_NUM_THREADS=MKL_NUM_THREADS={loop.threads} each; runs in {root}"
            )
            try:
                loop.run_queue()
            except KeyboardInterrupt:
                cancelled = True
                loop.cancel_all()
        finally:
            be.close()
    return SweepResult(
        group=plan.group,
        store=str(root),
        backend=be.name,
        max_parallel=be.max_parallel,
        threads_per_trial=loop.threads,
        n_trials=len(plan.trials),
        outcomes=tuple(loop.outcomes[i] for i in sorted(loop.outcomes)),
        cancelled=cancelled,
        elapsed_s=time.perf_counter() - t0,
        resume_command=_resume_command(plan.group, request.store, root),
        config_passing=_config_passing(plan),
        early_stop=None
        if loop.stopper is None
        else EarlyStopSummary(loop.stopper.policy, tuple(loop.stopper.stopped.values())),
    )


def _warm_imports() -> None:
    """Import what a stop decision uses (scipy's t quantile, behind ``expkit.stats.seeds``) before the first
    trial starts: a first import of scipy took 5 s under load, and the trials ran on meanwhile."""
    from expkit.stats.seeds import t_quantile

    t_quantile(0.95, 4)


def _config_passing(plan: SweepPlan) -> str:
    """One line on how each trial's config and seed reach its command (placeholders, arguments, env)."""
    if plan.placeholders:
        how = "placeholders " + ", ".join("{" + k + "}" for k in plan.placeholders) + " in the command and "
    elif plan.config_args:
        how = "--config KEY=VALUE arguments and "
    else:
        how = ""
    return how + "EXPKIT_CONFIG_<KEY> environment variables; the seed as " + plan.seed_passing
