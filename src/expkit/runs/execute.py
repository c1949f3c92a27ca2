"""``expkit runs exec``: record any command as a run without changing it.

The command's stdout and stderr are teed to ``output.log`` (and to the caller), its exit code becomes
the status, and every stdout line that is a JSON object with an integer ``"step"`` becomes a metrics
line, e.g. ``print(json.dumps({"step": 10, "loss": 2.31}))``. If the command itself calls
``expkit.runs.start()``, that call attaches to this run (config, seed and data are merged in).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from expkit.errors import UsageError
from expkit.runs.records import create_run_record, now_iso
from expkit.runs.store import resolve_store, write_run

__all__ = ["ExecResult", "execute", "final_metrics_of", "parse_metrics_line"]

OutputSink = Callable[[str, bytes], None]


@dataclass(frozen=True)
class ExecResult:
    """The run a command became: ``status`` is finished, failed or killed; ``exit_code`` as returned."""

    run_id: str
    run_dir: str
    status: str
    exit_code: int
    elapsed_s: float
    final_metrics: dict[str, Any]


def parse_metrics_line(line: bytes) -> dict[str, Any] | None:
    """A metrics record from one stdout line, or None: a JSON object with an int ``step``; numeric
    values are kept, others dropped.

    Example:
        >>> parse_metrics_line(b'{"step": 3, "loss": 0.5, "note": "x"}')
        {'step': 3, 'loss': 0.5}
    """
    text = line.strip()
    if not text.startswith(b"{") or b'"step"' not in text:
        return None
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or type(obj.get("step")) is not int:
        return None
    return {k: v for k, v in obj.items()
            if k == "step" or (isinstance(v, (int, float)) and not isinstance(v, bool))}


def final_metrics_of(path: Path) -> dict[str, Any]:
    """The last value of each metric in a ``metrics.jsonl`` (a torn last line is skipped)."""
    final: dict[str, Any] = {}
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return final
    for line in raw.splitlines():
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            final.update(rec)
    final.pop("time", None)
    return final


def _pump(stream: IO[bytes], name: str, log: IO[bytes], log_lock: threading.Lock, metrics: IO[bytes] | None,
          sink: OutputSink | None, tail: list[bytes]) -> None:
    for line in iter(stream.readline, b""):
        if sink is not None:
            sink(name, line)
        with log_lock:
            log.write(line)
            log.flush()
        if metrics is not None:
            rec = parse_metrics_line(line)
            if rec is not None:
                rec["time"] = time.time()
                with log_lock:
                    metrics.write(orjson.dumps(rec) + b"\n")
                    metrics.flush()
        else:
            tail.append(line)
            del tail[:-60]


def _merge_attached(record: dict[str, Any], run_dir: Path) -> None:
    path = run_dir / "attached.json"
    if not path.exists():
        return
    try:
        extra = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        record["attached_error"] = "attached.json is not valid JSON"
        return
    for key in ("config", "seed", "environment", "hardware"):
        if key in extra:
            record[key] = extra[key]
    record["data"] = record.get("data", []) + extra.get("data", [])
    for key in ("checkpoints", "artifacts"):
        record.setdefault(key, []).extend(extra.get(key, []))
    from expkit.runs.store import write_json_atomic

    write_json_atomic(run_dir / "config.json", record.get("config") or {})
    record["attached"] = True


def execute(command: list[str], *, store: str | os.PathLike[str] | None = None, name: str | None = None,
            data: list[str] | tuple[str, ...] = (), seed: int | None = None, group: str | None = None,
            deterministic: bool | str = False, full_hash: bool = False, cwd: str | os.PathLike[str] | None = None,
            on_output: OutputSink | None = None, extra_record: dict[str, Any] | None = None,
            config: dict[str, Any] | None = None, env: dict[str, str] | None = None,
            on_start: Callable[[int], None] | None = None) -> ExecResult:
    """Run ``command`` as a recorded run.

    Args:
        command: the argv to run (``["python", "train.py", "--lr", "3e-4"]``).
        store, name, data, group, full_hash: as for ``start()``.
        seed: handed to the command as ``EXPKIT_SEED`` (one is drawn and recorded when None).
        deterministic: True sets ``EXPKIT_DETERMINISTIC=1`` and ``CUBLAS_WORKSPACE_CONFIG``; ``"warn"``
            asks for warnings instead of errors from ops without a deterministic implementation.
        cwd: the working directory of the command (default: this one).
        on_output: called with ("stdout"|"stderr", line) for each output line (the CLI tees to the terminal).
        extra_record: fields added to ``run.json`` (e.g. ``repro_of``).
        config: the run's config record (``config.json``), e.g. a sweep trial's ``{"lr": 0.001}``.
        env: variables added to the command's environment (on top of this process's).
        on_start: called with the command's pid once it started (``expkit sweep`` cancels through it).

    Returns:
        ExecResult. SIGTERM/SIGINT sent to this process are forwarded and the run is ``killed``.

    Example:
        >>> execute(["python", "-c", "print('{\\"step\\": 1, \\"loss\\": 0.5}')"]).final_metrics  # doctest: +SKIP
        {'step': 1, 'loss': 0.5}
    """
    if not command:
        raise UsageError("no command given", hint="write it after --, e.g. expkit runs exec -- python train.py")
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
        seed_source = "generated"
    else:
        seed_source = "argument"
    root = resolve_store(store)
    old_cwd = Path.cwd()
    workdir = Path(cwd).resolve() if cwd is not None else old_cwd
    os.chdir(workdir)  # the code record is taken where the command runs
    try:
        record = create_run_record(root=root, name=name, group=group, config=dict(config or {}), data=data, seed=seed,
                                   full_hash=full_hash, deterministic=bool(deterministic), kind="exec",
                                   command=list(command), seed_in_process=False, extra=extra_record)
    finally:
        os.chdir(old_cwd)
    record["seed"]["source"] = seed_source
    run_dir = root / record["id"]
    child_env = {**os.environ, **(env or {}), "EXPKIT_RUN_DIR": str(run_dir), "EXPKIT_SEED": str(seed),
                 "PYTHONUNBUFFERED": "1"}
    if deterministic:
        child_env["EXPKIT_DETERMINISTIC"] = "warn" if deterministic == "warn" else "1"
        child_env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(command, cwd=workdir, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        record.update(status="failed", ended_at=now_iso(), error=f"could not start {command[0]!r}: {exc}")
        write_run(root, record)
        raise UsageError(f"could not start {command[0]!r}: {exc.strerror}", hint="check the command after --") from None
    if on_start is not None:
        on_start(proc.pid)

    received: list[int] = []
    old_handlers: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        def forward(signum: int, frame: Any) -> None:
            received.append(signum)
            proc.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT):
            old_handlers[sig] = signal.signal(sig, forward)

    stop = threading.Event()

    def beat() -> None:
        hb = run_dir / "heartbeat"
        while not stop.wait(1.0):
            hb.touch()

    (run_dir / "heartbeat").touch()
    tail: list[bytes] = []
    lock = threading.Lock()
    with open(run_dir / "output.log", "ab") as log, open(run_dir / "metrics.jsonl", "ab") as metrics:
        threads = [threading.Thread(target=_pump, args=(proc.stdout, "stdout", log, lock, metrics, on_output, tail)),
                   threading.Thread(target=_pump, args=(proc.stderr, "stderr", log, lock, None, on_output, tail)),
                   threading.Thread(target=beat, daemon=True)]
        for t in threads:
            t.start()
        code = proc.wait()
        for t in threads[:2]:
            t.join()
        stop.set()
    for sig, old in old_handlers.items():
        signal.signal(sig, old)
    elapsed = time.perf_counter() - t0

    if received or code < 0:
        status = "killed"
        record["signal"] = signal.Signals(received[0] if received else -code).name
    elif code == 0:
        status = "finished"
    else:
        status = "failed"
        record["error"] = (f"exit code {code}; last lines of stderr:\n" + b"".join(tail).decode(errors="replace"))
    _merge_attached(record, run_dir)
    final = final_metrics_of(run_dir / "metrics.jsonl")
    record.update(status=status, exit_code=code, ended_at=now_iso(), final_metrics=final, elapsed_s=elapsed)
    write_run(root, record)
    return ExecResult(run_id=record["id"], run_dir=str(run_dir), status=status, exit_code=code,
                      elapsed_s=elapsed, final_metrics=final)
