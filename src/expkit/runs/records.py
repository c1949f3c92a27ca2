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
from typing import Any, NamedTuple

from expkit.runs.codestate import capture_code
from expkit.runs.environment import SeedRecord, capture_environment, capture_hardware, seed_everything
from expkit.runs.files import is_regular_file
from expkit.runs.findings import RecordedFindings, read_recorded_findings
from expkit.runs.fingerprint import fingerprint_data
from expkit.runs.runrecord import SCHEMA_VERSION, LogsRecord, RunRecord
from expkit.runs.store import validate_name, write_json_atomic, write_record

__all__ = [
    "SCHEMA_VERSION",
    "RunRequest",
    "RunView",
    "capture_in_process",
    "create_run_record",
    "new_run_dir",
    "now_iso",
    "seed_process",
]

SEVEN_RECORDS = ("code", "data", "config", "environment", "seed", "hardware", "logs")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class NewRunDir(NamedTuple):
    run_id: str
    path: Path


def new_run_dir(root: Path) -> NewRunDir:
    """Create a fresh run directory ``YYYYmmdd-HHMMSS-xxxxxx`` (mkdir is the lock between processes)."""
    root.mkdir(parents=True, exist_ok=True)
    while True:
        run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        path = root / run_id
        try:
            path.mkdir()
            return NewRunDir(run_id, path)
        except FileExistsError:
            continue


def seed_process(seed: int | None, *, deterministic: bool) -> SeedRecord:
    """Seed python/numpy/torch and, when asked, switch torch to deterministic algorithms."""
    rec = seed_everything(seed)
    if deterministic:
        import torch

        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # PyTorch reproducibility notes
        torch.use_deterministic_algorithms(True, warn_only=os.environ.get("EXPKIT_DETERMINISTIC") == "warn")
    return dataclasses.replace(rec, deterministic=deterministic)


def recorded_seed(seed: int | None, *, deterministic: bool, seeded_by: str) -> SeedRecord:
    """The seed record of a process that someone else seeds (``seeded_by``); nothing is seeded here."""
    source = "argument" if seed is not None else None
    if seed is None and os.environ.get("EXPKIT_SEED", "").isdigit():
        seed, source = int(os.environ["EXPKIT_SEED"]), "EXPKIT_SEED"
    return SeedRecord(
        seed=seed,
        source=source,
        seeded=(),
        not_seeded={"all": f"seeded by {seeded_by}"},
        note=None,
        deterministic=deterministic,
    )


def capture_in_process(
    *,
    config: dict[str, Any],
    data: Any,
    seed: int | None,
    full_hash: bool,
    deterministic: bool,
    config_notes: tuple[str, ...] = (),
    seeded_by: str | None = None,
) -> dict[str, Any]:
    """The records only the training process itself knows: config, data, seed, environment, GPUs
    (written as ``attached.json`` beside the run a ``runs exec`` owns)."""
    seed_rec = (
        seed_process(seed, deterministic=deterministic)
        if seeded_by is None
        else recorded_seed(seed, deterministic=deterministic, seeded_by=seeded_by)
    )
    return {
        "config": config,
        "config_notes": list(config_notes),
        "data": [dataclasses.asdict(f) for f in fingerprint_data(list(data), full_hash=full_hash)],
        "seed": dataclasses.asdict(seed_rec),
        "environment": dataclasses.asdict(capture_environment()),
        "hardware": dataclasses.asdict(capture_hardware()),
    }


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """What a new run record is made from.

    ``kind`` is ``api`` (``start()``) or ``exec`` (``runs exec``). ``seed_in_process=False`` (``runs
    exec``) records the seed handed to the child as ``EXPKIT_SEED`` without seeding this process;
    ``seeded_by`` names who seeds the process instead of expkit. ``cwd`` is the directory the run works
    in (default: this process's): the code record is taken there (unless ``code_dir``), relative data
    paths are read from it, and it is recorded as ``cwd``. ``extra`` is kept under the record's
    ``extra`` (e.g. ``repro_of``).
    """

    root: Path
    kind: str
    command: tuple[str, ...]
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    data: tuple[Any, ...] = ()
    seed: int | None = None
    name: str | None = None
    group: str | None = None
    full_hash: bool = False
    deterministic: bool = False
    world_size: int = 1
    seed_in_process: bool = True
    seeded_by: str | None = None
    code_dir: Path | None = None
    cwd: Path | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    config_notes: tuple[str, ...] = ()
    integration: str | None = None


SEED_HANDED_TO_COMMAND = "handed to the command as EXPKIT_SEED; whether the command uses it is not known here"


def _seed_record_for(request: RunRequest) -> SeedRecord:
    """Seed this process, or only record the seed someone else applies (see RunRequest)."""
    if request.seeded_by is not None:
        return recorded_seed(request.seed, deterministic=request.deterministic, seeded_by=request.seeded_by)
    if request.seed_in_process:
        return seed_process(request.seed, deterministic=request.deterministic)
    return SeedRecord(
        seed=request.seed,
        source="argument" if request.seed is not None else None,
        seeded=(),
        not_seeded={"all": SEED_HANDED_TO_COMMAND},
        note=None,
        deterministic=request.deterministic,
    )


def _write_patch(run_dir: Path, patch: str | None) -> None:
    """``code.patch`` beside ``run.json`` (temp file + rename), when there is one."""
    if patch:
        tmp = run_dir / ".code.patch.tmp"
        tmp.write_text(patch)
        os.replace(tmp, run_dir / "code.patch")


def create_run_record(request: RunRequest) -> RunRecord:
    """Create the run directory and write ``run.json`` (status ``running``), ``config.json`` and
    ``code.patch``, and index the run. Nothing here changes this process's directory, so threads may
    create records concurrently.
    """
    import psutil

    if request.name is not None:
        validate_name(request.name)
    if request.group is not None:  # a group names groups/<group>.json: no '/', no '..', as a run name
        validate_name(request.group, what="group name")
    t0 = time.perf_counter()
    root = request.root
    workdir = request.cwd.resolve() if request.cwd is not None else Path.cwd()
    # git (subprocesses) runs in a thread while this one reads packages, hardware and data
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        code_future = pool.submit(capture_code, request.code_dir or workdir, exclude=(root,))
        environment = capture_environment()
        hardware = capture_hardware()
        data_records = fingerprint_data(list(request.data), full_hash=request.full_hash, base_dir=workdir)
        code = code_future.result()
    # the directory only once the records are taken (~1 s): a process killed while taking them (a SIGKILLed
    # `expkit sweep`) left a run directory without run.json, listed as broken for good
    run_id, run_dir = new_run_dir(root)
    _write_patch(run_dir, code.patch)
    code = dataclasses.replace(code, patch=None, patch_file="code.patch" if code.patch else None)
    proc = psutil.Process()
    record = RunRecord(
        id=run_id,
        name=request.name,
        group=request.group,
        kind=request.kind,
        status="running",
        created_at=now_iso(),
        created_unix=time.time(),
        pid=proc.pid,
        pid_create_time=proc.create_time(),
        command=tuple(request.command),
        cwd=str(workdir),
        world_size=request.world_size,
        code=code,
        data=data_records,
        config=request.config,
        config_notes=tuple(request.config_notes),
        environment=environment,
        seed=_seed_record_for(request),
        hardware=hardware,
        logs=LogsRecord(output="output.log" if request.kind == "exec" else None),
        host=platform.node(),
        extra=dict(request.extra),
        integration=request.integration,
    )
    write_json_atomic(run_dir / "config.json", request.config)
    record = dataclasses.replace(record, capture_s=round(time.perf_counter() - t0, 4))
    write_record(root, record)
    return record


@dataclasses.dataclass(frozen=True)
class RecordPresence:
    """One of the seven records in a stored run: present, with a one-line summary, or why it is not."""

    record: str
    present: bool
    summary: str


@dataclasses.dataclass(frozen=True)
class RunView:
    """A stored run as ``runs show`` presents it: the record (status resolved: a dead ``running`` run
    reads ``lost``) and the check of its seven records. Its JSON is the record's ``run.json`` form."""

    record: RunRecord
    records: tuple[RecordPresence, ...]
    doctor: RecordedFindings | None = None  # doctor.json: what `expkit doctor` found while the run ran

    def __json__(self) -> dict[str, Any]:
        out = self.record.to_json()
        if self.doctor is not None:  # run.json's form, plus the doctor record when the run has one
            out["doctor"] = dataclasses.asdict(self.doctor)
        return out


def describe_run(ref: str, *, store: str | os.PathLike[str] | None = None) -> RunView:
    """The run ``ref`` (an id, a unique id prefix or a name) in ``store``, with its seven records checked.

    Raises:
        UsageError: no run, or more than one, matches ``ref``.
        InputError: its ``run.json`` is unreadable or of a newer schema.
    """
    from expkit.runs.store import find_run_dir, read_record, resolve_status, resolve_store

    root = resolve_store(store)
    run_dir = find_run_dir(root, ref)
    record = resolve_status(root, read_record(run_dir))
    return RunView(record, describe_records(record, run_dir), doctor=read_recorded_findings(run_dir))


def describe_records(record: RunRecord | dict[str, Any], run_dir: Path) -> tuple[RecordPresence, ...]:
    """Check and summarize the seven records of a stored run (for ``show``, ``diff`` and the C6.4 lab)."""
    rec = record if isinstance(record, RunRecord) else RunRecord.from_json(record, path=run_dir / "run.json")
    code = rec.code
    if code is not None and code.commit:
        extra = (
            (
                f", dirty: {code.changed_files} changed + {code.untracked_files} untracked"
                f" files in code.patch ({code.patch_bytes} bytes"
                f"{', TRUNCATED at cap' if code.patch_truncated else ''})"
            )
            if code.dirty
            else ", clean"
        )
        code_p = RecordPresence("code", True, f"{code.commit[:12]} on {code.branch}{extra}")
    else:
        code_p = RecordPresence("code", False, (code.reason if code else None) or "no commit recorded")
    data = rec.data
    data_p = RecordPresence(
        "data",
        bool(data) and all(d.hash or d.revision for d in data),
        "; ".join(
            f"{Path(d.path).name if d.path else d.hf_name}: "
            f"{(d.hash or d.revision or d.reason or '')[:12]}" + (f" ({d.hash_scheme})" if d.hash_scheme else "")
            for d in data
        )
        or "no inputs declared",
    )
    cfg = rec.config
    cfg_p = RecordPresence(
        "config",
        (run_dir / "config.json").exists() and cfg is not None,
        (f"{len(cfg)} keys in config.json" if cfg else "empty config")
        + (f" ({len(rec.config_notes)} notes)" if rec.config_notes else ""),
    )
    env = rec.environment
    env_p = RecordPresence(
        "environment",
        bool(env and env.packages),
        f"python {env.python}, torch {env.torch}, {len(env.packages)} packages" if env else "not recorded",
    )
    seed = rec.seed
    if seed is not None:
        seed_p = RecordPresence(
            "seed",
            seed.seed is not None,
            f"{seed.seed} ({seed.source}; "
            + (f"seeded {', '.join(seed.seeded)})" if seed.seeded else f"{_how_seeded(seed)})"),
        )
    else:
        seed_p = RecordPresence("seed", False, "not recorded")
    hw = rec.hardware
    if hw is not None:
        gpus = ", ".join(hw.gpu_names) or "no GPU"
        hw_p = RecordPresence(
            "hardware",
            bool(hw.cpu_model or hw.cpu_cores_logical),
            f"{hw.cpu_model}, {hw.cpu_cores_logical} cores, {(hw.ram_bytes or 0) / 2**30:.1f} GiB, {gpus}",
        )
    else:
        hw_p = RecordPresence("hardware", False, "not recorded")
    n_lines = 0
    metric_files = sorted(run_dir.glob("metrics*.jsonl"))
    for path in metric_files:
        if is_regular_file(path):  # a FIFO put there would block the open for ever
            with open(path, "rb") as f:  # newlines counted in 1 MiB blocks: 1M lines in ~0.1 s, not ~1.4 s
                n_lines += sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    out = run_dir / "output.log"
    logs_p = RecordPresence(
        "logs",
        bool(metric_files) or out.exists(),
        f"metrics {n_lines} lines in {len(metric_files)} file(s), "
        f"{len(rec.checkpoints)} checkpoints" + (f", output.log {out.stat().st_size} bytes" if out.exists() else ""),
    )
    return (code_p, data_p, cfg_p, env_p, seed_p, hw_p, logs_p)


def _how_seeded(seed: SeedRecord) -> str:
    """What the record says about who applied a seed expkit did not apply itself (a callback run: the
    framework; ``runs exec``: the command, if it reads EXPKIT_SEED), never more than it knows."""
    said = seed.not_seeded.get("all")
    return said or "not applied by expkit"
