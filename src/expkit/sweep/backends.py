"""Where trials run: a local pool of processes, Ray tasks (a local instance or a cluster), or a Slurm job
array (``expkit.sweep.slurm``, through submitit).

A backend is a ``SweepBackend`` (the protocol below) made by a factory registered under its name in
``BACKENDS`` (``@register_backend("name")``); ``expkit sweep --backend`` offers the names in that table, so a
new backend is one class and one registration, and the CLI is not touched.

Both built-in backends run each trial through ``expkit.runs.execute.execute`` (the seven records, output, metrics),
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
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from expkit.errors import MissingDependency, UsageError

__all__ = [
    "BACKENDS",
    "AttemptOutcome",
    "BackendSettings",
    "LocalBackend",
    "RayBackend",
    "SweepBackend",
    "TrialJob",
    "backend_names",
    "check_ray_address",
    "cpu_count",
    "make_backend",
    "register_backend",
]

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
    from expkit.runs.store import read_record

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
            rec = read_record(Path(res.run_dir))
            error = rec.error or (f"signal {rec.signal}" if rec.signal else None)
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


ADDRESS_CONNECT_TIMEOUT_S = 5.0  # how long a cluster address may take to accept a TCP connection


def check_ray_address(address: str, *, timeout_s: float = ADDRESS_CONNECT_TIMEOUT_S) -> None:
    """Fail fast, naming ``address``, when it is malformed or nothing accepts a connection there: ray itself
    retries a refusing ``host:port`` for minutes and raises tracebacks for malformed ones. ``auto`` (a
    cluster started on this machine) is left to ray, which answers at once.

    Raises:
        UsageError: a malformed address (not ``auto``, ``host:port`` or ``ray://host:port``), or one whose
            port refuses or does not answer within ``timeout_s``.
    """
    import socket

    if address == "auto":
        return
    hint = "give auto, HOST:PORT (the GCS port, 6379) or ray://HOST:PORT (the client port, 10001)"
    rest = address.removeprefix("ray://")
    host, sep, port_text = rest.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536 or "/" in host:
        raise UsageError(f"address {address!r} is not a Ray cluster address", hint=hint)
    try:
        with socket.create_connection((host.strip("[]"), int(port_text)), timeout=timeout_s):
            pass
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise UsageError(
            f"address {address!r}: no Ray cluster there ({why} within {timeout_s:g} s)",
            hint="start one with `ray start --head`, check host and port, or give no address for a local Ray",
        ) from None


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
        if ray.is_initialized() and address and address != "auto" and not address.startswith("ray://"):
            here = ray.get_runtime_context().gcs_address  # a Ray Client (ray://) session cannot be compared
            if address != here:
                raise UsageError(
                    f"address {address!r}: Ray is already running in this process, connected to {here}",
                    hint="call ray.shutdown() first to join another cluster, or give no address to use this one",
                )
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address:
                check_ray_address(address)
                try:
                    ray.init(address=address, **kwargs)
                except Exception as exc:  # noqa: BLE001 - ray raises ConnectionError, RuntimeError, ValueError ...
                    raise UsageError(
                        f"address {address!r}: no Ray cluster could be joined there: {type(exc).__name__}: "
                        + (str(exc).strip().splitlines() or [""])[0][:200],
                        hint="start one with `ray start --head`, or give no address for a local Ray instance",
                    ) from None
            else:
                ray.init(num_cpus=num_cpus, **kwargs)
            self._started = True
        total = ray.cluster_resources().get("CPU", 1.0)
        self.max_parallel = max(1, int(total // max(cpus_per_trial, 1e-9))) if cpus_per_trial > 0 else int(total)
        self._task = ray.remote(_ray_execute).options(num_cpus=cpus_per_trial, num_gpus=gpus_per_trial, max_retries=0)

    def submit(self, job: TrialJob) -> Hashable:
        return self._task.remote(job)

    def ref_of(self, handle: Hashable) -> str | None:
        """The task's object id, recorded in the sweep's jobs file. There is nothing to adopt on a resume: a
        Ray task dies with the driver that owns it, and its command with it (``execute``'s parent-death
        signal), so its trial runs again."""
        return str(handle.hex())  # type: ignore[attr-defined]

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


@dataclass(frozen=True)
class BackendSettings:
    """How big a backend is: ``max_parallel`` trials at once (None: as many as the CPUs allow at
    ``cpus_per_trial`` each), a cluster ``address`` (Ray), each trial's CPU and GPU share, and for Slurm
    the ``partition`` and each trial's ``time_limit`` (sbatch's ``--time`` forms, e.g. ``00:10:00``)."""

    max_parallel: int | None = None
    address: str | None = None
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    partition: str | None = None
    time_limit: str | None = None


class SweepBackend(Protocol):
    """What the sweep driver asks of a backend: ``submit`` one attempt of a trial (a handle back), ``wait``
    until some handles ended, the ``outcome`` of an ended handle, the ``pid_of`` a running trial's process
    where the backend knows it, ``cancel`` running handles, ``close`` at the end. ``name`` is recorded in
    each run; ``max_parallel`` is how many attempts the driver keeps in flight."""

    name: str
    max_parallel: int

    def submit(self, job: TrialJob) -> Hashable: ...

    def wait(self, handles: list[Hashable], timeout_s: float) -> list[Hashable]: ...

    def outcome(self, handle: Hashable) -> AttemptOutcome: ...

    def pid_of(self, handle: Hashable) -> int | None: ...

    def cancel(self, handles: list[Hashable]) -> None: ...

    def close(self) -> None: ...


BackendFactory = Callable[[BackendSettings], SweepBackend]
# name -> factory; filled by @register_backend below (and by anyone who adds a backend)
BACKENDS: dict[str, BackendFactory] = {}


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Register a backend factory under ``name`` (``@register_backend("slurm")``); a later registration
    of the same name replaces the earlier one."""

    def add(factory: BackendFactory) -> BackendFactory:
        BACKENDS[name] = factory
        return factory

    return add


def backend_names() -> tuple[str, ...]:
    """The registered backend names, in registration order (``local`` first)."""
    return tuple(BACKENDS)


@contextlib.contextmanager
def registered_backend(name: str, factory: BackendFactory) -> Iterator[None]:
    """Register ``factory`` under ``name`` for the duration of a ``with`` block (tests, plugins tried out)."""
    previous = BACKENDS.get(name)
    BACKENDS[name] = factory
    try:
        yield
    finally:
        if previous is None:
            BACKENDS.pop(name, None)
        else:
            BACKENDS[name] = previous


def _no_slurm_settings(name: str, settings: BackendSettings) -> None:
    for field_name in ("partition", "time_limit"):
        value = getattr(settings, field_name)
        if value is not None:
            raise UsageError(f"{field_name} {value!r} is for the slurm backend; the {name} backend takes none")


@register_backend("local")
def make_local_backend(settings: BackendSettings) -> LocalBackend:
    """Processes on this machine: ``max_parallel`` or CPUs // cpus_per_trial at once; no GPUs, no address."""
    _no_slurm_settings("local", settings)
    if settings.address:
        raise UsageError(f"address {settings.address!r} is for a cluster; the local backend takes none")
    if settings.gpus_per_trial:
        raise UsageError("the local backend does not hand out GPUs (gpus_per_trial)", hint="use the ray backend")
    return LocalBackend(max_parallel=settings.max_parallel or max(1, int(cpu_count() // settings.cpus_per_trial)))


@register_backend("ray")
def make_ray_backend(settings: BackendSettings) -> RayBackend:
    """Ray tasks on the cluster at ``address`` or on a local instance sized to ``max_parallel`` or the CPUs."""
    _no_slurm_settings("ray", settings)
    backend = RayBackend(
        address=settings.address,
        num_cpus=None if settings.address else (settings.max_parallel or cpu_count()),
        cpus_per_trial=settings.cpus_per_trial,
        gpus_per_trial=settings.gpus_per_trial,
    )
    if settings.max_parallel is not None:
        backend.max_parallel = min(backend.max_parallel, settings.max_parallel)
    return backend


@register_backend("slurm")
def make_slurm_backend(settings: BackendSettings) -> SweepBackend:
    """A Slurm job array through submitit (``expkit.sweep.slurm``, imported when asked for)."""
    from expkit.sweep.slurm import make_slurm_backend as make

    return make(settings)


def make_backend(name: str, settings: BackendSettings) -> SweepBackend:
    """The backend registered as ``name``, sized by ``settings``.

    Raises:
        UsageError: an unknown name (the registered ones listed), max_parallel < 1, cpus_per_trial <= 0,
            gpus_per_trial < 0, or settings the backend cannot use (GPUs or an address for ``local``).
        MissingDependency: the backend's library is not installed (``pip install 'expkit[ray]'``,
            ``'expkit[slurm]'``).
    """
    factory = BACKENDS.get(name)
    if factory is None:
        raise UsageError(f"backend {name!r} is not one of {', '.join(BACKENDS)}")
    if settings.max_parallel is not None and settings.max_parallel < 1:
        raise UsageError(f"max_parallel {settings.max_parallel} must be at least 1")
    if not (math.isfinite(settings.cpus_per_trial) and settings.cpus_per_trial > 0):
        raise UsageError(f"cpus_per_trial {settings.cpus_per_trial} must be a finite number > 0")
    if not (math.isfinite(settings.gpus_per_trial) and settings.gpus_per_trial >= 0):
        raise UsageError(f"gpus_per_trial {settings.gpus_per_trial} must be a finite number >= 0")
    return factory(settings)
