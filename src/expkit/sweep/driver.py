"""``run_sweep``: every trial of a plan as a recorded run, on a backend, with retries, cancel and resume.

Faults, and what the sweep does about each:

- a trial's command fails (non-zero exit): its run is ``failed`` with the last lines of stderr (the
  traceback); the other trials go on; not retried (a failing command fails again);
- a trial's process is killed by a signal the sweep did not send (SIGKILL, the OOM killer), or a Ray worker
  dies: that run is ``killed`` (or ``lost``) and the trial runs again, up to ``max_retries`` more times;
- Ctrl-C (SIGINT) or SIGTERM to the sweep: no new trial starts, running ones get SIGTERM (SIGKILL after
  10 s) and their runs are marked ``killed``; the result says how to resume;
- ``resume``: trials whose run (by name, ``<group>-tNNN``) finished are skipped; the rest run. Nothing that
  finished runs twice.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.runs.store import list_runs, read_run, resolve_store, write_run
from expkit.sweep.backends import AttemptOutcome, TrialJob, make_backend
from expkit.sweep.plan import SweepPlan, Trial, read_plan, write_plan

__all__ = ["SweepProgress", "SweepResult", "TrialOutcome", "run_sweep"]

POLL_S = 0.25  # how often the driver looks at running trials (and notices Ctrl-C)
CANCEL_REASON = "cancelled: the sweep was interrupted (Ctrl-C or SIGTERM)"


@dataclass(frozen=True)
class TrialOutcome:
    """How a trial ended after all its attempts. ``status``: finished, failed, killed (cancelled), lost
    (killed by a signal or a dead worker on every attempt), done before (finished in an earlier sweep of
    this group; ``resume``), or not started (cancelled before its turn)."""

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

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes:
            out[o.status] = out.get(o.status, 0) + 1
        return out

    @property
    def complete(self) -> bool:
        """Every trial has a finished run (now or before)."""
        return all(o.status in ("finished", "done before") for o in self.outcomes)

    def __json__(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "counts": self.counts, "complete": self.complete}


def _finished_names(root: Path, group: str) -> dict[str, str]:
    """Run name -> run id of the finished runs of ``group`` (listing also turns dead ``running`` into lost)."""
    listing = list_runs(root, where=[f"group={group}", "status=finished"])
    return {r.name: r.id for r in listing.runs if r.name}


def _mark_killed(run_dir: str | None, reason: str) -> None:
    """A cancelled trial's run says ``killed`` whatever its command made of the signal (exit 130 ...)."""
    if not run_dir:
        return
    path = Path(run_dir)
    try:
        rec = read_run(path)
    except Exception:  # noqa: BLE001 - nothing to correct
        return
    if rec.get("status") in ("finished", "killed"):
        return
    rec.update(status="killed", status_reason=reason)
    write_run(path.parent, rec)


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


def run_sweep(
    plan: SweepPlan | None = None,
    *,
    resume: str | None = None,
    store: str | os.PathLike[str] | None = None,
    backend: str = "local",
    address: str | None = None,
    max_parallel: int | None = None,
    max_retries: int = 1,
    cpus_per_trial: float = 1.0,
    gpus_per_trial: float = 0.0,
    on_progress: Callable[[SweepProgress], None] | None = None,
) -> SweepResult:
    """Run every trial of ``plan`` (or, with ``resume=GROUP``, the unfinished trials of that sweep).

    Args:
        plan: from ``plan_sweep``; written to ``<store>/groups/<group>.sweep.json`` for ``--resume``.
        resume: the group of an earlier sweep in this store; its plan is read back.
        store: the run store (default ``$EXPKIT_STORE`` or ``./runs``); with Ray, on a shared filesystem.
        backend: ``local`` (processes here) or ``ray``.
        address: a Ray cluster (``auto``, ``ray://head:10001``); None starts a local Ray instance.
        max_parallel: trials at once (default: CPUs // cpus_per_trial).
        max_retries: extra attempts for a trial whose process was killed or whose worker died.
        cpus_per_trial: Ray's ``num_cpus``; locally also the trial's ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``.
        gpus_per_trial: Ray's ``num_gpus`` (Ray backend only).
        on_progress: called after every event with the counts.

    Returns:
        SweepResult; ``cancelled`` when Ctrl-C/SIGTERM stopped it (then ``resume_command`` continues it).

    Raises:
        UsageError: neither or both of plan and resume, a bad option (see ``make_backend``).
        MissingDependency: ``backend="ray"`` without ray installed.

    Example:
        >>> plan = plan_sweep(["python", "train.py"], group="lr", grid=["lr=1e-3,3e-3"], seeds=4)  # doctest: +SKIP
        >>> run_sweep(plan).counts  # doctest: +SKIP
        {'finished': 8}
    """
    from expkit.errors import UsageError

    if (plan is None) == (resume is None):
        raise UsageError("give a command to sweep or --resume GROUP, not both or neither")
    if max_retries < 0:
        raise UsageError(f"--max-retries {max_retries} must be >= 0")
    root = resolve_store(store)
    if plan is None:
        assert resume is not None
        plan = read_plan(root, resume)
        done = _finished_names(root, plan.group)
    else:
        done = _finished_names(root, plan.group) if root.exists() else {}
        if done:
            raise UsageError(
                f"group {plan.group!r} already has {len(done)} finished runs in {root}",
                hint=f"continue it with `expkit sweep --resume {plan.group}` or choose another --name",
            )
        write_plan(root, plan)
    trials = plan.trials
    be = make_backend(
        backend,
        max_parallel=max_parallel,
        address=address,
        cpus_per_trial=cpus_per_trial,
        gpus_per_trial=gpus_per_trial,
    )
    threads = max(1, int(cpus_per_trial))
    base_env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    cwd = str(Path.cwd())
    outcomes: dict[int, TrialOutcome] = {}
    for t in trials:
        rid = done.get(t.run_name(plan.group))
        if rid is not None:
            outcomes[t.index] = TrialOutcome(
                t.index, t.label, t.config, t.seed, "done before", 0, rid, 0, 0.0, {}, None
            )
    queue: deque[tuple[Trial, int]] = deque((t, 1) for t in trials if t.index not in outcomes)
    inflight: dict[Hashable, tuple[Trial, int]] = {}
    counts = {"finished": 0, "failed": 0, "retried": 0}
    unreported: set[str] = set()  # cancelled trials whose run id never came back

    def report(event: str) -> None:
        if on_progress is not None:
            on_progress(
                SweepProgress(
                    len(trials),
                    counts["finished"] + sum(1 for o in outcomes.values() if o.status == "done before"),
                    len(inflight),
                    counts["failed"],
                    counts["retried"],
                    event,
                )
            )

    def job_of(trial: Trial, attempt: int) -> TrialJob:
        return TrialJob(
            command=tuple(plan.command_of(trial)),
            store=str(root),
            group=plan.group,
            name=trial.run_name(plan.group),
            seed=trial.seed,
            config=trial.config,
            env={**base_env, **plan.env_of(trial)},
            cwd=cwd,
            extra_record={
                "sweep": {
                    "group": plan.group,
                    "trial": trial.index,
                    "label": trial.label,
                    "attempt": attempt,
                    "backend": be.name,
                    "config": trial.config,
                }
            },
        )

    def settle(trial: Trial, attempt: int, res: AttemptOutcome, cancelled: bool) -> None:
        status = res.status
        if cancelled and status not in ("finished", "not started"):
            _mark_killed(res.run_dir, CANCEL_REASON)
            if res.run_dir is None:
                unreported.add(trial.run_name(plan.group))
            status = "killed"
        elif status in ("killed", "lost"):
            if attempt <= max_retries:
                counts["retried"] += 1
                queue.append((trial, attempt + 1))
                report(f"{trial.label}: {status} ({res.error or 'no result'}), retry {attempt}/{max_retries}")
                return
            status = "lost"
        outcomes[trial.index] = TrialOutcome(
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
            counts["finished" if status == "finished" else "failed"] += 1
        report(f"{trial.label}: {status}")

    # SIGTERM ends the sweep the way Ctrl-C does (main thread only: where Python runs signal handlers)
    old_term = None
    if threading.current_thread() is threading.main_thread():

        def on_term(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        old_term = signal.signal(signal.SIGTERM, on_term)
    t0 = time.perf_counter()
    cancelled = False
    try:
        report(
            f"{len(queue)} trials to run ({len(outcomes)} finished before) on the {be.name} backend, "
            f"{be.max_parallel} at a time, OMP_NUM_THREADS=MKL_NUM_THREADS={threads} each; runs in {root}"
        )
        try:
            while queue or inflight:
                while queue and len(inflight) < be.max_parallel:
                    trial, attempt = queue.popleft()
                    inflight[be.submit(job_of(trial, attempt))] = (trial, attempt)
                    report(f"{trial.label}: started" + (f" (attempt {attempt})" if attempt > 1 else ""))
                for h in be.wait(list(inflight), POLL_S):
                    trial, attempt = inflight.pop(h)
                    settle(trial, attempt, be.outcome(h), cancelled=False)
        except KeyboardInterrupt:
            cancelled = True
            handles = list(inflight)
            be.cancel(handles)
            for h in handles:
                trial, attempt = inflight.pop(h)
                settle(trial, attempt, be.outcome(h), cancelled=True)
            _mark_cancelled_runs(root, plan.group, unreported, CANCEL_REASON)
            while queue:
                trial, _ = queue.popleft()
                outcomes[trial.index] = TrialOutcome(
                    trial.index, trial.label, trial.config, trial.seed, "not started", 0, None, None, 0.0, {}, None
                )
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        be.close()
    return SweepResult(
        group=plan.group,
        store=str(root),
        backend=be.name,
        max_parallel=be.max_parallel,
        threads_per_trial=threads,
        n_trials=len(trials),
        outcomes=tuple(outcomes[i] for i in sorted(outcomes)),
        cancelled=cancelled,
        elapsed_s=time.perf_counter() - t0,
        resume_command=_resume_command(plan.group, store, root),
        config_passing=("--config KEY=VALUE arguments and " if plan.config_args else "") + "EXPKIT_CONFIG_<KEY> "
        "environment variables; the seed as EXPKIT_SEED",
    )
