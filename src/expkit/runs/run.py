"""A run as the training code sees it: ``with start(config=cfg, data=[...], seed=0) as run:`` then
``run.log(step, loss=...)``, ``run.save_checkpoint(state, name)``, ``run.artifact(path)``.

``run.log`` only appends to an in-memory queue; a background thread writes ``metrics.jsonl`` and the
heartbeat every 0.5 s (no fsync). Under ``torchrun`` rank 0 owns the record and every other rank
writes ``metrics.rank<R>.jsonl`` into the same directory. Under ``expkit runs exec`` the script's run
attaches to the record the exec owns.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import math
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import UsageError
from expkit.runs import records
from expkit.runs.metrics import is_divergence_metric, jsonable_metrics, summarize_metrics
from expkit.runs.runrecord import ArtifactEntry, CheckpointEntry, RunRecord
from expkit.runs.store import resolve_store, validate_name, write_json_atomic, write_record

__all__ = ["FLUSH_INTERVAL_S", "Run", "RunTerminated", "start", "validate_config", "validate_config_notes"]

# The bound is "flushed at least every second"; half of it leaves margin for a slow disk.
FLUSH_INTERVAL_S = 0.5
RANK_WAIT_S = 120.0
# Under torchrun each rank > 0 touches `flushed.rank<R>` once its last metrics are on disk; rank 0 waits this
# long for them before it summarizes the ranks' files into run.json (issue 21: rank 1 was read at step 15 of 30).
RANK_FLUSHED_PREFIX = "flushed.rank"
RANK_FLUSH_WAIT_S = 30.0
_PARTIAL_RANK_NOTE = "no flush marker"
# Written into the run directory when a script under `runs exec` logs through start(): the exec then
# leaves stdout's metrics lines alone.
METRICS_CLAIM_FILE = "metrics.claimed"
_STARTS_IN_PROCESS = [0]


class RunTerminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives during a run (recorded as ``killed``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signal.Signals(signum).name}")
        self.signum = signum


def _check_jsonable(value: Any, where: str, notes: list[str]) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(
                f"config key {where!r} is {value!r}, which JSON cannot hold", hint="use a finite number or a string"
            )
        return value
    if isinstance(value, (list, tuple)):
        return [_check_jsonable(v, f"{where}[{i}]", notes) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = k
            if not isinstance(k, str):
                if not (k is None or isinstance(k, (bool, int, float))):
                    raise UsageError(
                        f"config key {k!r} under {where!r} is a {type(k).__name__}, which JSON cannot hold as a key",
                        hint="use str, int, float or bool keys",
                    )
                key = json.dumps(k)  # JSON's own spelling: 0, true, null
                if key in value:
                    raise UsageError(f"config keys {k!r} and {key!r} under {where!r} collide as JSON keys")
                notes.append(
                    f"config key {k!r} under {where or 'the top level'!r} is a {type(k).__name__}; "
                    f"stored as the string {key!r}"
                )
            out[key] = _check_jsonable(v, f"{where}.{key}" if where else key, notes)
        return out
    raise UsageError(
        f"config key {where!r} holds a {type(value).__name__} ({value!r:.60}), which is not JSON",
        hint="convert it to a str, number, bool, list or dict before start()",
    )


def validate_config_notes(config: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``config`` as a JSON-able dict and the notes on what changed to store it.

    A dataclass goes through ``asdict``; a dict is checked key by key. Non-string keys (``id2label``'s
    ``{0: "NEG"}`` in ``model.config.to_dict()``) are kept as strings (``"0"``), each with a note.

    Raises:
        UsageError: naming the first key whose value is not JSON (e.g. ``'optim.device'``).
    """
    if config is None:
        return {}, ()
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    if not isinstance(config, dict):
        raise UsageError(f"config is a {type(config).__name__}", hint="pass a dataclass instance or a dict")
    notes: list[str] = []
    return _check_jsonable(config, "", notes), tuple(notes)


def coerce_config(obj: Any, where: str = "", notes: list[str] | None = None) -> Any:
    """``obj`` made JSON-able for a config record, saying what changed: objects JSON cannot hold
    (enums, dtypes, paths, NaN) become their ``str`` with a note; dict keys are left to
    ``validate_config_notes`` (non-string keys kept as strings, with a note). For what a framework
    hands over (``TrainingArguments.to_dict()``, Lightning hparams), not for a user's own config.
    """
    notes = notes if notes is not None else []
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        notes.append(f"config value {where!r} is {obj!r}; stored as the string {str(obj)!r}")
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = dataclasses.asdict(obj)
    if isinstance(obj, dict):
        return {k: coerce_config(v, f"{where}.{k}" if where else str(k), notes) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return [coerce_config(v, f"{where}[{i}]", notes) for i, v in enumerate(items)]
    value = getattr(obj, "value", None)  # an Enum: its value
    if value is not None and isinstance(value, (str, int, float, bool)):
        return value
    text = str(obj)
    notes.append(f"config value {where!r} is a {type(obj).__name__}; stored as the string {text[:60]!r}")
    return text


def validate_config(config: Any) -> dict[str, Any]:
    """``config`` as a JSON-able dict (see ``validate_config_notes``; the notes are dropped here)."""
    return validate_config_notes(config)[0]


def _number(key: str, value: Any) -> float | int:
    if isinstance(value, bool):
        return int(value)
    try:
        return float(value.item() if hasattr(value, "item") else value)  # torch/numpy scalars
    except (TypeError, ValueError):
        raise UsageError(
            f"metric {key!r} = {value!r:.60} is not a number",
            hint="log numbers (a 0-d tensor is fine); put text in an artifact",
        ) from None


class Run:
    """A live run. Use ``start()`` to make one. ``id`` and ``dir`` locate the record."""

    def __init__(
        self,
        *,
        run_id: str,
        run_dir: Path,
        store: Path,
        rank: int,
        world_size: int,
        mode: str,
        record: RunRecord | None,
        metrics_file: str,
    ) -> None:
        self.id = run_id
        self.dir = run_dir
        self.store = store
        self.rank = rank
        self.world_size = world_size
        self.mode = mode  # "owner", "rank" (torchrun rank > 0) or "attached" (under runs exec)
        self._record = record
        self._queue: deque[dict[str, Any]] = deque()
        self._final: dict[str, Any] = {}
        self._last_step: int | None = None
        self._diverged_at: str | None = None
        self._claimed = False
        self._metrics_path = run_dir / metrics_file
        self._stop = threading.Event()
        self._closed = False
        self._lock = threading.Lock()
        self._old_handlers: dict[int, Any] = {}
        self._thread = threading.Thread(target=self._flush_loop, name=f"expkit-run-{run_id}", daemon=True)
        self._thread.start()
        atexit.register(self._at_exit)

    # --- the hot path -------------------------------------------------------------------------
    def log(self, step: int, **metrics: Any) -> None:
        """Record ``metrics`` at ``step`` (e.g. ``run.log(10, loss=2.31, lr=3e-4)``); ~1 us, no I/O."""
        if type(step) is not int:
            step = int(step)
        rec: dict[str, Any] = {"step": step, "time": time.time()}
        for k, v in metrics.items():
            v = v if type(v) is float or type(v) is int else _number(k, v)
            rec[k] = v
            if self._diverged_at is None and not math.isfinite(v) and is_divergence_metric(k):
                self._diverged_at = f"step {step}: {k}={v}" + (f" (rank {self.rank})" if self.rank else "")
        self._queue.append(rec)
        if self.mode == "attached" and not self._claimed:
            self._claim_metrics()
        self._final.update(rec)
        self._last_step = step

    def _claim_metrics(self) -> None:
        """Under ``runs exec``: this script logs its own metrics, so the exec stops reading them from
        stdout (a Trainer prints every log dict too; both would be recorded)."""
        (self.dir / METRICS_CLAIM_FILE).touch()
        self._claimed = True

    def _flush(self) -> None:
        if not self._queue:
            return
        with self._lock:
            lines = []
            while self._queue:
                lines.append(orjson.dumps(jsonable_metrics(self._queue.popleft())))
            with open(self._metrics_path, "ab") as f:
                f.write(b"\n".join(lines) + b"\n")

    def _flush_loop(self) -> None:
        beat = self.dir / ("heartbeat" if self.mode == "owner" else f"heartbeat.rank{self.rank}")
        beat.touch()
        next_beat = time.monotonic() + 1.0
        while not self._stop.wait(FLUSH_INTERVAL_S):
            self._flush()
            if time.monotonic() >= next_beat:
                beat.touch()
                next_beat = time.monotonic() + 1.0

    # --- files --------------------------------------------------------------------------------
    def save_checkpoint(self, state: dict[str, Any], name: str) -> Path | None:
        """Save ``state`` as ``checkpoints/NAME/`` (see ``expkit.runs.checkpoint.save_checkpoint``); returns
        that directory. Under torchrun only rank 0 writes (None elsewhere).
        """
        from expkit.runs.checkpoint import save_checkpoint

        if self.mode == "rank":
            return None
        info = save_checkpoint(state, self.dir / "checkpoints", name)
        files = tuple(f"{name}/{f}" for f in (*info.files, "manifest.json"))
        self.note_checkpoint(CheckpointEntry(name=name, files=files, step=self._last_step))
        return info.path

    def note_checkpoint(self, entry: CheckpointEntry) -> None:
        """Record a checkpoint written elsewhere (a Trainer's ``checkpoint-500/``, Lightning's ``.ckpt``)."""
        if self.mode == "rank":
            return
        self._note("checkpoints", [dataclasses.asdict(entry)])

    def artifact(self, path: str | os.PathLike[str], name: str | None = None) -> Path:
        """Copy a file into ``artifacts/`` (atomically) and record its size and sha256."""
        import hashlib

        src = Path(path)
        if not src.is_file():
            raise UsageError(f"artifact {str(src)!r} is not a file")
        dest_name = validate_name(name or src.name, what="artifact name")
        out = self.dir / "artifacts"
        out.mkdir(exist_ok=True)
        tmp = out / f".{dest_name}.tmp"
        shutil.copyfile(src, tmp)
        os.replace(tmp, out / dest_name)
        digest = hashlib.sha256((out / dest_name).read_bytes()).hexdigest()
        self._note(
            "artifacts",
            [{"name": dest_name, "source": str(src.resolve()), "size_bytes": src.stat().st_size, "sha256": digest}],
        )
        return out / dest_name

    def _note(self, key: str, items: list[dict[str, Any]]) -> None:
        if self.mode == "owner" and self._record is not None:
            entry_type: Any = CheckpointEntry if key == "checkpoints" else ArtifactEntry
            added = tuple(
                entry_type(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in i.items()}) for i in items
            )
            self._record = dataclasses.replace(self._record, **{key: getattr(self._record, key) + added})
            write_record(self.store, self._record)
        elif self.mode == "attached":
            path = self.dir / "attached.json"
            extra = orjson.loads(path.read_bytes()) if path.exists() else {}
            extra.setdefault(key, []).extend(items)
            write_json_atomic(path, extra)

    # --- closing ------------------------------------------------------------------------------
    @property
    def final_metrics(self) -> dict[str, Any]:
        """The last logged value of each metric (and its step)."""
        return {k: v for k, v in self._final.items() if k != "time"}

    @property
    def diverged_at(self) -> str | None:
        """Where a logged loss or gradient norm first went NaN/inf (``"step 12: loss=nan"``), or None."""
        return self._diverged_at

    def update_config(self, config: Any, *, source: str) -> None:
        """Merge ``config`` into the run's config under ``source`` (e.g. ``"training_args"``); non-string
        keys are stored as strings with a note. Rank > 0: nothing (rank 0 owns the record)."""
        cfg, notes = validate_config_notes(config)
        if self.mode == "owner" and self._record is not None:
            merged = {**self._record.config, source: cfg}
            self._record = dataclasses.replace(
                self._record, config=merged, config_notes=self._record.config_notes + notes
            )
            write_json_atomic(self.dir / "config.json", merged)
            write_record(self.store, self._record)
        elif self.mode == "attached":
            path = self.dir / "attached.json"
            extra = orjson.loads(path.read_bytes()) if path.exists() else {}
            extra["config"] = {**(extra.get("config") or {}), source: cfg}
            extra["config_notes"] = [*(extra.get("config_notes") or []), *notes]
            write_json_atomic(path, extra)

    def add_config_notes(self, notes: tuple[str, ...]) -> None:
        """Add notes on how the config was stored (values an integration had to stringify)."""
        if self.mode == "owner" and self._record is not None:
            self._record = dataclasses.replace(self._record, config_notes=self._record.config_notes + tuple(notes))
            write_record(self.store, self._record)
        elif self.mode == "attached":
            path = self.dir / "attached.json"
            extra = orjson.loads(path.read_bytes()) if path.exists() else {}
            extra["config_notes"] = [*(extra.get("config_notes") or []), *notes]
            write_json_atomic(path, extra)

    def set_integration(self, name: str) -> None:
        """Say which integration fed this run (``hf-trainer``, ``lightning``)."""
        if self.mode == "owner" and self._record is not None:
            self._record = dataclasses.replace(self._record, integration=name)
            write_record(self.store, self._record)
        elif self.mode == "attached":
            self._claim_metrics()
            path = self.dir / "attached.json"
            extra = orjson.loads(path.read_bytes()) if path.exists() else {}
            extra["integration"] = name
            write_json_atomic(path, extra)

    def settle(self, status: str = "finished") -> None:
        """Record ``status`` and the metrics so far now, and stay open: a framework's end of training is not the
        end of the run (``trainer.evaluate()`` after ``train()``, Lightning's ``test()`` after ``fit()``). What is
        logged later lands in the same run at its step, and the record is written again when the run closes
        (``finish``, or at interpreter exit)."""
        if self._closed:
            return
        self._flush()
        self._write_final(status, error=None, signum=None)

    def finish(self, status: str = "finished", *, error: str | None = None, signum: int | None = None) -> None:
        """Flush and close: ``finished``, ``failed`` (``error`` = traceback) or ``killed`` (``signum``)."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self._at_exit)
        self._stop.set()
        self._thread.join(timeout=5)
        self._flush()
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        if self.mode == "rank":
            (self.dir / f"{RANK_FLUSHED_PREFIX}{self.rank}").touch()  # rank 0 waits for this before it reads us
        self._write_final(status, error=error, signum=signum)

    def _write_final(self, status: str, *, error: str | None, signum: int | None) -> None:
        if self.mode != "owner" or self._record is None:
            return
        from expkit.runs.records import now_iso

        unflushed = self._wait_for_ranks() if self._closed else ()
        others = summarize_metrics(self.dir)  # the other ranks' files, as far as they reached disk
        notes = tuple(n for n in self._record.metric_notes if _PARTIAL_RANK_NOTE not in n)
        notes += tuple(
            f"rank {r}: {_PARTIAL_RANK_NOTE} within {RANK_FLUSH_WAIT_S:g} s, so its final metrics are as far as "
            f"they reached disk (step {others.by_rank.get(str(r), {}).get('step')})"
            for r in unflushed
        )
        diverged_at = self._diverged_at or others.diverged_at
        self._record = dataclasses.replace(
            self._record,
            status=status,
            ended_at=now_iso(),
            final_metrics=jsonable_metrics(self.final_metrics),
            final_metrics_by_rank=others.by_rank,
            metric_notes=notes,
            error=error,
            diverged=diverged_at is not None,
            diverged_at=diverged_at,
            signal=signal.Signals(signum).name if signum is not None else None,
        )
        write_record(self.store, self._record)

    def _wait_for_ranks(self) -> tuple[int, ...]:
        """Under torchrun rank 0 closes first more often than not: wait (at most ``RANK_FLUSH_WAIT_S``) until
        every other rank has flushed its last metrics; returns the ranks that never said so (their figures
        are as far as they reached disk)."""
        pending = set(range(1, self.world_size))
        deadline = time.monotonic() + RANK_FLUSH_WAIT_S
        while pending and time.monotonic() < deadline:
            pending = {r for r in pending if not (self.dir / f"{RANK_FLUSHED_PREFIX}{r}").exists()}
            if pending:
                time.sleep(0.05)
        return tuple(sorted(pending))

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            self.finish("finished")
        elif isinstance(exc, RunTerminated):
            self.finish("killed", signum=exc.signum)
        elif isinstance(exc, KeyboardInterrupt):
            self.finish("killed", signum=signal.SIGINT)
        else:
            self.finish("failed", error="".join(traceback.format_exception(exc_type, exc, tb)))

    def _at_exit(self) -> None:
        err = getattr(sys, "last_value", None)
        if err is None:
            self.finish("finished")
        elif isinstance(err, KeyboardInterrupt):
            self.finish("killed", signum=getattr(err, "signum", signal.SIGINT))
        else:
            self.finish("failed", error="".join(traceback.format_exception(err)))

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        previous = signal.getsignal(signal.SIGTERM)

        def on_term(signum: int, frame: Any) -> None:
            if callable(previous):  # a handler the script installed still runs first
                previous(signum, frame)
            raise RunTerminated(signum)

        self._old_handlers[signal.SIGTERM] = signal.signal(signal.SIGTERM, on_term)


def _rank_key(store: Path) -> Path:
    import hashlib

    parts = [
        os.environ.get(k, "")
        for k in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT")
    ]
    parts.append(str(_STARTS_IN_PROCESS[0]))
    key = hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()
    return store / ".torchrun" / f"{key}.json"


def _agent_start_time() -> float:
    import psutil

    try:
        return psutil.Process(os.getppid()).create_time()
    except psutil.Error:
        return 0.0


@dataclasses.dataclass(frozen=True)
class Capture:
    """How ``start()`` takes the seven records.

    Attributes:
        full_hash: hash every byte of the data instead of sampled blocks.
        deterministic: call ``torch.use_deterministic_algorithms(True)``; None reads ``$EXPKIT_DETERMINISTIC``.
        code_dir: where to read the git state (default: the working directory).
        seeded_by: who seeds the process instead of expkit (e.g. ``"the Hugging Face Trainer
            (TrainingArguments.seed)"``): the seed is recorded, python/numpy/torch are left alone.
    """

    full_hash: bool = False
    deterministic: bool | None = None
    code_dir: str | os.PathLike[str] | None = None
    seeded_by: str | None = None


def start(
    config: Any = None,
    data: list[Any] | tuple[Any, ...] = (),
    seed: int | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    *,
    group: str | None = None,
    capture: Capture | None = None,
) -> Run:
    """Start a run: capture the seven records, seed everything, and return a Run (a context manager).

    Args:
        config: a dataclass instance (recorded through ``asdict``) or a JSON-able dict.
        data: inputs to fingerprint: paths, directories or ``hf://NAME@REVISION``.
        seed: the root seed for python, numpy and torch; None takes ``$EXPKIT_SEED`` or draws one
            (recorded either way). A seed you pass is never overridden.
        store: the store directory (default ``$EXPKIT_STORE`` or ``./runs``).
        name: a human name (letters, digits, ``. _ + -``); several runs may share one.
        group: runs compared against one noise floor (see ``expkit runs determinism``).
        capture: how the records are taken (:class:`Capture`: full data hashes, deterministic
            algorithms, where the git state is read, who seeds the process); the defaults fit a script.

    Returns:
        The Run; ``run.id``, ``run.dir``.

    Raises:
        UsageError: a config value that is not JSON (its key named), a bad name or seed.

    Example:
        >>> with start(config={"lr": 3e-4}, data=["train.jsonl"], seed=0) as run:  # doctest: +SKIP
        ...     run.log(1, loss=2.5)
    """
    cfg, cfg_notes = validate_config_notes(config)
    if name is not None:
        validate_name(name)
    if group is not None:
        validate_name(group, what="group name")
    cap = capture if capture is not None else Capture()
    deterministic = cap.deterministic
    if deterministic is None:
        deterministic = os.environ.get("EXPKIT_DETERMINISTIC", "") not in ("", "0")
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    _STARTS_IN_PROCESS[0] += 1
    request = records.RunRequest(
        root=resolve_store(store),
        kind="api",
        command=(sys.executable, *sys.argv),
        config=cfg,
        data=tuple(data),
        seed=seed,
        name=name,
        group=group,
        full_hash=cap.full_hash,
        deterministic=deterministic,
        world_size=world,
        seeded_by=cap.seeded_by,
        code_dir=Path(cap.code_dir) if cap.code_dir is not None else None,
        config_notes=cfg_notes,
    )
    attach_dir = os.environ.get("EXPKIT_RUN_DIR")
    if attach_dir and rank != 0:  # `runs exec -- torchrun ...`: the exec owns the record, rank R logs beside it
        return _rank_beside(Path(attach_dir), request, rank)
    if attach_dir:
        return _attach_to_exec(Path(attach_dir), request)
    if rank != 0:  # torchrun: rank 0 creates the run; this rank takes its seed when none was given here
        owner = _wait_for_rank0(request.root, rank)
        if request.seed is None:
            request = dataclasses.replace(request, seed=owner.seed)
        return _rank_beside(owner.run_dir, request, rank)
    return _own_run(request)


@dataclasses.dataclass(frozen=True)
class _OwnerRun:
    """What rank 0 under torchrun tells the other ranks: its run directory and the seed it recorded."""

    run_dir: Path
    seed: int | None


def _rank_beside(run_dir: Path, request: records.RunRequest, rank: int) -> Run:
    """Rank ``rank`` > 0 logs ``metrics.rank<R>.jsonl`` into the run another process owns; it is seeded
    unless someone else seeds it (``seeded_by``)."""
    if request.seeded_by is None:
        records.seed_process(request.seed, deterministic=request.deterministic)
    return Run(
        run_id=run_dir.name,
        run_dir=run_dir,
        store=run_dir.parent,
        rank=rank,
        world_size=request.world_size,
        mode="rank",
        record=None,
        metrics_file=f"metrics.rank{rank}.jsonl",
    )


def _attach_to_exec(run_dir: Path, request: records.RunRequest) -> Run:
    """Under ``runs exec`` the exec owns the record: this process writes what only it knows (config,
    data, seed, environment, GPUs) into ``attached.json`` and logs ``metrics.jsonl``."""
    captured = records.capture_in_process(
        config=request.config,
        data=request.data,
        seed=request.seed,
        full_hash=request.full_hash,
        deterministic=request.deterministic,
        config_notes=request.config_notes,
        seeded_by=request.seeded_by,
    )
    write_json_atomic(run_dir / "attached.json", captured)
    return Run(
        run_id=run_dir.name,
        run_dir=run_dir,
        store=run_dir.parent,
        rank=0,
        world_size=request.world_size,
        mode="attached",
        record=None,
        metrics_file="metrics.jsonl",
    )


def _wait_for_rank0(root: Path, rank: int) -> _OwnerRun:
    """The run rank 0 created under torchrun (read from the pointer file it writes), waiting at most
    RANK_WAIT_S for it.

    Raises:
        UsageError: rank 0 did not create the run in time (another store, or not on a shared filesystem).
    """
    pointer = _rank_key(root)
    not_before = _agent_start_time() - 1.0
    deadline = time.monotonic() + RANK_WAIT_S
    while True:
        try:
            info = orjson.loads(pointer.read_bytes())
            if info["written_unix"] >= not_before:
                return _OwnerRun(root / info["id"], info["seed"])
        except (FileNotFoundError, orjson.JSONDecodeError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise UsageError(
                f"rank {rank} waited {RANK_WAIT_S:.0f} s for rank 0 to create the run in {root}",
                hint="all ranks need the same store on a shared filesystem (the store argument or EXPKIT_STORE)",
            )
        time.sleep(0.05)


def _own_run(request: records.RunRequest) -> Run:
    """Rank 0 (or the only process) creates the record; under torchrun it leaves a pointer for the others."""
    record = records.create_run_record(request)
    root = request.root
    if request.world_size > 1:
        pointer = _rank_key(root)
        pointer.parent.mkdir(exist_ok=True)
        write_json_atomic(
            pointer, {"id": record.id, "seed": record.seed.seed if record.seed else None, "written_unix": time.time()}
        )
    run = Run(
        run_id=record.id,
        run_dir=root / record.id,
        store=root,
        rank=0,
        world_size=request.world_size,
        mode="owner",
        record=record,
        metrics_file="metrics.jsonl",
    )
    run._install_signal_handlers()
    return run
