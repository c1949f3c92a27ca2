"""Where trials run: a local pool of processes, or Ray tasks (a local instance or a cluster).

Both backends run each trial through ``expkit.runs.execute.execute`` (the seven records, output, metrics),
so a trial's run looks the same whichever backend ran it. They share one small interface that the sweep
driver (``expkit.sweep.driver``) uses: ``submit`` a trial, ``wait`` for some to end, take the ``outcome``,
``cancel`` what is running, ``close``.

Local: one thread per running trial waits on the trial's own process (the work is in the processes, so
threads cost nothing); each process gets ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` = its CPU share.
Ray: one Ray task per trial (``num_cpus``/``num_gpus`` per trial), started on a local instance
(``ray.init(num_cpus=...)``) or the cluster at ``address``. The task runs ``execute`` on the worker's node and
writes the run into the store path the driver resolved: the store must be on a filesystem every node
mounts at the same path (records are written there directly, not copied back).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expkit.errors import MissingDependency, UsageError

__all__ = ["AttemptOutcome", "LocalBackend", "RayBackend", "TrialJob", "cpu_count"]

# After a cancel, a trial process gets SIGTERM, then SIGKILL when it has not ended within this many seconds.
CANCEL_GRACE_S = 10.0


def cpu_count() -> int:
    """Logical CPUs this process may use (its affinity where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@dataclass(frozen=True)
class TrialJob:
    """One attempt at one trial, as a backend receives it (plain values: it travels to Ray workers)."""

    command: tuple[str, ...]
    store: str
    group: str
    name: str
    seed: int
    config: dict[str, Any]
    env: dict[str, str]
    cwd: str
    extra_record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AttemptOutcome:
    """How one attempt ended. ``status``: finished, failed, killed (a signal ended the process) or lost
    (the worker itself died: no result came back). ``error`` names what went wrong."""

    status: str
    run_id: str | None
    run_dir: str | None
    exit_code: int | None
    elapsed_s: float
    final_metrics: dict[str, Any]
    error: str | None = None


def _execute_job(job: TrialJob, on_start: Callable[[int], None] | None = None) -> AttemptOutcome:
    from expkit.runs.execute import ExecRequest, execute
    from expkit.runs.store import read_run

    cwd = job.cwd if Path(job.cwd).is_dir() else None  # another node may not have the driver's directory
    request = ExecRequest(
        tuple(job.command),
        store=job.store,
        name=job.name,
        seed=job.seed,
        group=job.group,
        config=dict(job.config),
        env=dict(job.env),
        cwd=cwd,
        extra_record=dict(job.extra_record),
    )
    res = execute(request, on_start=on_start)
    error = None
    if res.status != "finished":
        try:
            rec = read_run(Path(res.run_dir))
            error = rec.get("error") or (f"signal {rec['signal']}" if rec.get("signal") else None)
        except Exception as exc:  # noqa: BLE001 - the outcome stands without its error text
            error = f"(run.json unreadable: {exc})"
    return AttemptOutcome(
        res.status, res.run_id, res.run_dir, res.exit_code, res.elapsed_s, dict(res.final_metrics), error
    )


class LocalBackend:
    """Trials as child processes of this one, at most ``max_parallel`` at a time."""

    name = "local"

    def __init__(self, *, max_parallel: int) -> None:
        self.max_parallel = max_parallel
        self._pool = ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="expkit-trial")
        self._pids: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def submit(self, job: TrialJob) -> Hashable:
        holder: list[Future[AttemptOutcome]] = []
        ready = threading.Event()

        def remember(pid: int) -> None:
            ready.wait()
            with self._lock:
                self._pids[holder[0]] = pid

        fut = self._pool.submit(_execute_job, job, remember)
        holder.append(fut)
        ready.set()
        return fut

    def wait(self, handles: list[Hashable], timeout_s: float) -> list[Hashable]:
        done, _ = futures_wait(handles, timeout=timeout_s, return_when=FIRST_COMPLETED)  # type: ignore[arg-type]
        return list(done)

    def outcome(self, handle: Hashable) -> AttemptOutcome:
        with self._lock:
            self._pids.pop(handle, None)
        if handle.cancelled():  # type: ignore[attr-defined]
            return AttemptOutcome("not started", None, None, None, 0.0, {}, None)
        try:
            return handle.result()  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - a trial that could not start is a failed trial, not a crash
            return AttemptOutcome("failed", None, None, None, 0.0, {}, f"{type(exc).__name__}: {exc}")

    def pid_of(self, handle: Hashable) -> int | None:
        with self._lock:
            return self._pids.get(handle)

    def cancel(self, handles: list[Hashable]) -> None:
        """SIGTERM to every running trial process, SIGKILL to those still there after CANCEL_GRACE_S."""
        for h in handles:
            h.cancel()  # type: ignore[attr-defined]  # not started yet: never starts
        deadline = time.monotonic() + CANCEL_GRACE_S
        sent_kill = False
        while True:
            with self._lock:
                live = [pid for h, pid in self._pids.items() if h in handles and not h.done()]  # type: ignore[attr-defined]
            if not live:
                return
            sig = signal.SIGKILL if time.monotonic() > deadline else signal.SIGTERM
            if sig == signal.SIGTERM or not sent_kill:
                for pid in live:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
                sent_kill = sig == signal.SIGKILL
            futures_wait(handles, timeout=0.5)  # type: ignore[arg-type]
            if all(h.done() for h in handles):  # type: ignore[attr-defined]
                return

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _ray_execute(job: TrialJob) -> AttemptOutcome:
    """The Ray task: run one attempt on whichever node Ray placed it."""
    return _execute_job(job)


class RayBackend:
    """Trials as Ray tasks. Connects to ``address`` (``auto``, ``ray://head:10001``) or starts a local
    instance with ``num_cpus`` CPUs, which ``close`` stops again (an instance already running in this
    process is used and left running)."""

    name = "ray"

    def __init__(
        self, *, address: str | None, num_cpus: int | None, cpus_per_trial: float, gpus_per_trial: float
    ) -> None:
        try:
            import ray
        except ImportError:
            raise MissingDependency("the Ray backend needs ray", hint="pip install 'expkit[ray]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address:
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=num_cpus, **kwargs)
            self._started = True
        total = ray.cluster_resources().get("CPU", 1.0)
        self.max_parallel = max(1, int(total // max(cpus_per_trial, 1e-9))) if cpus_per_trial > 0 else int(total)
        self._task = ray.remote(_ray_execute).options(num_cpus=cpus_per_trial, num_gpus=gpus_per_trial, max_retries=0)

    def submit(self, job: TrialJob) -> Hashable:
        return self._task.remote(job)

    def wait(self, handles: list[Hashable], timeout_s: float) -> list[Hashable]:
        ready, _ = self._ray.wait(handles, num_returns=1, timeout=timeout_s)
        if ready:  # take whatever else is ready too, without waiting
            more, _ = (
                self._ray.wait([h for h in handles if h not in ready], num_returns=len(handles) - len(ready), timeout=0)
                if len(handles) > len(ready)
                else ([], [])
            )
            ready = list(ready) + list(more)
        return list(ready)

    def outcome(self, handle: Hashable) -> AttemptOutcome:
        from ray.exceptions import RayTaskError, TaskCancelledError

        try:
            return self._ray.get(handle)  # type: ignore[call-overload]
        except TaskCancelledError:
            return AttemptOutcome("killed", None, None, None, 0.0, {}, "cancelled")
        except RayTaskError as exc:  # execute itself raised (e.g. the command could not start)
            return AttemptOutcome("failed", None, None, None, 0.0, {}, str(exc).strip().splitlines()[-1])
        except Exception as exc:  # noqa: BLE001 - worker died, node lost, object lost: no result came back
            return AttemptOutcome("lost", None, None, None, 0.0, {}, f"{type(exc).__name__}: {exc}")

    def pid_of(self, handle: Hashable) -> int | None:
        return None

    def cancel(self, handles: list[Hashable]) -> None:
        """``ray.cancel``: the task's ``execute`` receives SIGINT and forwards it to the trial process."""
        for h in handles:
            try:
                self._ray.cancel(h)
            except Exception:  # noqa: BLE001,S112 - already finished
                continue
        deadline = time.monotonic() + CANCEL_GRACE_S
        pending = list(handles)
        while pending and time.monotonic() < deadline:
            _, pending = self._ray.wait(pending, num_returns=len(pending), timeout=0.5)
        for h in pending:
            self._ray.cancel(h, force=True)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


def make_backend(
    kind: str, *, max_parallel: int | None, address: str | None, cpus_per_trial: float, gpus_per_trial: float
) -> LocalBackend | RayBackend:
    """The backend ``kind`` (local or ray) sized for this machine or cluster.

    Raises:
        UsageError: an unknown kind, a bad count, GPUs asked of the local backend, --address without ray.
        MissingDependency: ray is not installed (``pip install 'expkit[ray]'``).
    """
    if kind not in ("local", "ray"):
        raise UsageError(f"--backend {kind!r} is not local or ray")
    if max_parallel is not None and max_parallel < 1:
        raise UsageError(f"--max-parallel {max_parallel} must be at least 1")
    if cpus_per_trial <= 0 or gpus_per_trial < 0:
        raise UsageError(f"--cpus-per-trial {cpus_per_trial} must be > 0 and --gpus-per-trial {gpus_per_trial} >= 0")
    if kind == "local":
        if address:
            raise UsageError(f"--address {address} needs --backend ray")
        if gpus_per_trial:
            raise UsageError("the local backend does not hand out GPUs", hint="use --backend ray --gpus-per-trial 1")
        return LocalBackend(max_parallel=max_parallel or max(1, int(cpu_count() // cpus_per_trial)))
    backend = RayBackend(
        address=address,
        num_cpus=None if address else (max_parallel or cpu_count()),
        cpus_per_trial=cpus_per_trial,
        gpus_per_trial=gpus_per_trial,
    )
    if max_parallel is not None:
        backend.max_parallel = min(backend.max_parallel, max_parallel)
    return backend
