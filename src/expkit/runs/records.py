"""The seven records of a run assembled into ``run.json`` (plus ``config.json`` and ``code.patch``):
code, data, config, environment, seed, hardware, and the logs/checkpoints written during the run.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from expkit.runs.codestate import capture_code
from expkit.runs.environment import capture_environment, capture_hardware, seed_everything
from expkit.runs.fingerprint import fingerprint_data
from expkit.runs.store import validate_name, write_json_atomic, write_run

__all__ = ["SCHEMA_VERSION", "capture_in_process", "create_run_record", "new_run_dir", "now_iso", "seed_process"]

SCHEMA_VERSION = 1
SEVEN_RECORDS = ("code", "data", "config", "environment", "seed", "hardware", "logs")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_run_dir(root: Path) -> tuple[str, Path]:
    """Create a fresh run directory ``YYYYmmdd-HHMMSS-xxxxxx`` (mkdir is the lock between processes)."""
    root.mkdir(parents=True, exist_ok=True)
    while True:
        run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        path = root / run_id
        try:
            path.mkdir()
            return run_id, path
        except FileExistsError:
            continue


def seed_process(seed: int | None, *, deterministic: bool) -> dict[str, Any]:
    """Seed python/numpy/torch and, when asked, switch torch to deterministic algorithms."""
    rec = dataclasses.asdict(seed_everything(seed))
    if deterministic:
        import torch

        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # PyTorch reproducibility notes
        torch.use_deterministic_algorithms(True, warn_only=os.environ.get("EXPKIT_DETERMINISTIC") == "warn")
    rec["deterministic"] = deterministic
    return rec


def capture_in_process(*, config: dict[str, Any], data: Any, seed: int | None, full_hash: bool,
                       deterministic: bool) -> dict[str, Any]:
    """The records only the training process itself knows: config, data, seed, environment, GPUs."""
    seed_rec = seed_process(seed, deterministic=deterministic)
    return {
        "config": config,
        "data": [dataclasses.asdict(f) for f in fingerprint_data(list(data), full_hash=full_hash)],
        "seed": seed_rec,
        "environment": dataclasses.asdict(capture_environment()),
        "hardware": dataclasses.asdict(capture_hardware()),
    }


def create_run_record(*, root: Path, name: str | None, group: str | None, config: dict[str, Any], data: Any,
                      seed: int | None, full_hash: bool, deterministic: bool, kind: str, command: list[str],
                      world_size: int = 1, seed_in_process: bool = True, code_dir: str | Path | None = None,
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Create the run directory and write ``run.json`` (status ``running``), ``config.json`` and
    ``code.patch``, and index the run.

    ``seed_in_process=False`` (``runs exec``) records the seed handed to the child as ``EXPKIT_SEED``
    without seeding this process.
    """
    import psutil

    if name is not None:
        validate_name(name)
    t0 = time.perf_counter()
    run_id, run_dir = new_run_dir(root)
    # git (subprocesses) runs in a thread while this one reads packages, hardware and data
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    code_future = pool.submit(capture_code, Path(code_dir) if code_dir is not None else Path.cwd(), exclude=(root,))
    environment = dataclasses.asdict(capture_environment())
    hardware = dataclasses.asdict(capture_hardware())
    data_records = [dataclasses.asdict(f) for f in fingerprint_data(list(data), full_hash=full_hash)]
    code = code_future.result()
    pool.shutdown()
    patch = code.patch
    code_rec = dataclasses.asdict(code)
    code_rec["patch"] = None
    code_rec["patch_file"] = "code.patch" if patch else None
    if patch:
        tmp = run_dir / ".code.patch.tmp"
        tmp.write_text(patch)
        os.replace(tmp, run_dir / "code.patch")
    if seed_in_process:
        seed_rec = seed_process(seed, deterministic=deterministic)
    else:
        seed_rec = {"seed": seed, "source": "argument" if seed is not None else None, "seeded": [],
                    "not_seeded": {"all": "handed to the command as EXPKIT_SEED; the command seeds itself"},
                    "note": None, "deterministic": deterministic}
    proc = psutil.Process()
    record: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "id": run_id,
        "name": name,
        "group": group,
        "kind": kind,
        "status": "running",
        "created_at": now_iso(),
        "created_unix": time.time(),
        "ended_at": None,
        "pid": proc.pid,
        "pid_create_time": proc.create_time(),
        "command": command,
        "cwd": str(Path.cwd()),
        "world_size": world_size,
        "code": code_rec,
        "data": data_records,
        "config": config,
        "environment": environment,
        "seed": seed_rec,
        "hardware": hardware,
        "logs": {"metrics": "metrics.jsonl", "output": "output.log" if kind == "exec" else None,
                 "checkpoints": "checkpoints/"},
        "final_metrics": {},
        "error": None,
        "checkpoints": [],
        "artifacts": [],
        "host": platform.node(),
    }
    if extra:
        record.update(extra)
    write_json_atomic(run_dir / "config.json", config)
    record["capture_s"] = round(time.perf_counter() - t0, 4)
    write_run(root, record)
    return record


@dataclasses.dataclass(frozen=True)
class RecordPresence:
    """One of the seven records in a stored run: present, with a one-line summary, or why it is not."""

    record: str
    present: bool
    summary: str


def describe_records(record: dict[str, Any], run_dir: Path) -> tuple[RecordPresence, ...]:
    """Check and summarize the seven records of a stored run (for ``show``, ``diff`` and the C6.4 lab)."""
    code = record.get("code") or {}
    if code.get("commit"):
        extra = (f", dirty: {code.get('changed_files', 0)} changed + {code.get('untracked_files', 0)} untracked"
                 f" files in code.patch ({code.get('patch_bytes', 0)} bytes"
                 f"{', TRUNCATED at cap' if code.get('patch_truncated') else ''})") if code.get("dirty") else ", clean"
        code_p = RecordPresence("code", True, f"{code['commit'][:12]} on {code.get('branch')}{extra}")
    else:
        code_p = RecordPresence("code", False, code.get("reason") or "no commit recorded")
    data = record.get("data") or []
    data_p = RecordPresence("data", bool(data) and all(d.get("hash") or d.get("revision") for d in data),
                            "; ".join(f"{Path(d['path']).name if d.get('path') else d.get('hf_name')}: "
                                      f"{(d.get('hash') or d.get('revision') or d.get('reason') or '')[:12]}"
                                      for d in data) or "no inputs declared")
    cfg = record.get("config")
    cfg_p = RecordPresence("config", (run_dir / "config.json").exists() and cfg is not None,
                           f"{len(cfg or {})} keys in config.json" if cfg else "empty config")
    env = record.get("environment") or {}
    env_p = RecordPresence("environment", bool(env.get("packages")),
                           f"python {env.get('python')}, torch {env.get('torch')}, "
                           f"{len(env.get('packages') or {})} packages")
    seed = record.get("seed") or {}
    seed_p = RecordPresence("seed", seed.get("seed") is not None,
                            f"{seed.get('seed')} ({seed.get('source')}; "
                            + (f"seeded {', '.join(seed['seeded'])})" if seed.get("seeded")
                               else "handed to the command as EXPKIT_SEED)"))
    hw = record.get("hardware") or {}
    gpus = ", ".join(hw.get("gpu_names") or []) or "no GPU"
    hw_p = RecordPresence("hardware", bool(hw.get("cpu_model") or hw.get("cpu_cores_logical")),
                          f"{hw.get('cpu_model')}, {hw.get('cpu_cores_logical')} cores, "
                          f"{(hw.get('ram_bytes') or 0) / 2**30:.1f} GiB, {gpus}")
    metrics = run_dir / "metrics.jsonl"
    n_lines = sum(1 for _ in open(metrics, "rb")) if metrics.exists() else 0
    ckpts = record.get("checkpoints") or []
    out = run_dir / "output.log"
    logs_p = RecordPresence("logs", metrics.exists() or out.exists(),
                            f"metrics.jsonl {n_lines} lines, {len(ckpts)} checkpoints"
                            + (f", output.log {out.stat().st_size} bytes" if out.exists() else ""))
    return (code_p, data_p, cfg_p, env_p, seed_p, hw_p, logs_p)
