"""The embedded run store: one directory per run (``run.json`` is the truth) plus an SQLite index
(WAL, busy timeout) that keeps listing fast at thousands of runs and is rebuilt from the directories.

Status is resolved on read: a ``running`` run whose process is gone becomes ``lost``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import InputError, UsageError

__all__ = [
    "HEARTBEAT_STALE_S",
    "BrokenRun",
    "RunListing",
    "RunSummary",
    "find_run_dir",
    "index_run",
    "list_runs",
    "open_index",
    "read_run",
    "resolve_store",
    "validate_name",
    "write_json_atomic",
    "write_run",
]

DEFAULT_STORE = "runs"
INDEX_NAME = "index.sqlite"
# A heartbeat is written every second; a run on another host silent for 30 s is taken as lost.
HEARTBEAT_STALE_S = 30.0
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
_COLUMNS = {"id": "id", "name": "name", "status": "status", "seed": "seed", "commit": "commit_sha",
            "dirty": "dirty", "group": "grp", "kind": "kind", "hostname": "hostname", "created_at": "created_at"}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, name TEXT, status TEXT, created_at TEXT, ended_at TEXT, pid INTEGER,
  hostname TEXT, commit_sha TEXT, dirty INTEGER, seed INTEGER, grp TEXT, kind TEXT, command TEXT,
  config TEXT, final_metrics TEXT, error TEXT, run_json_mtime_ns INTEGER
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
CREATE INDEX IF NOT EXISTS runs_name ON runs(name);
"""


def resolve_store(store: str | os.PathLike[str] | None = None) -> Path:
    """The store directory: ``store``, else ``$EXPKIT_STORE``, else ``./runs``."""
    return Path(store if store is not None else os.environ.get("EXPKIT_STORE") or DEFAULT_STORE).absolute()


def validate_name(text: str, *, what: str = "run name") -> str:
    """Refuse names that could leave the store directory (``../x``, ``a/b``) or are empty.

    Raises:
        UsageError: naming the value and the allowed characters.
    """
    if not isinstance(text, str) or not _NAME_RE.match(text) or ".." in text:
        raise UsageError(f"{what} {text!r} is not allowed",
                         hint="use letters, digits and . _ + - (no '/', no '..', at most 128 characters)")
    return text


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to ``path`` through a temp file and ``os.replace`` (readers never see half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    os.replace(tmp, path)


def open_index(root: Path) -> sqlite3.Connection:
    """Open (and create) the index in WAL mode with a 30 s busy timeout."""
    root.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(root / INDEX_NAME, timeout=30.0, isolation_level=None)
    con.execute("PRAGMA busy_timeout=30000")
    if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(_SCHEMA)
    return con


def _row_of(record: dict[str, Any], mtime_ns: int) -> tuple[Any, ...]:
    code = record.get("code") or {}
    seed = record.get("seed") or {}
    return (record["id"], record.get("name"), record.get("status"), record.get("created_at"),
            record.get("ended_at"), record.get("pid"), (record.get("hardware") or {}).get("hostname"),
            code.get("commit"), None if code.get("dirty") is None else int(code["dirty"]), seed.get("seed"),
            record.get("group"), record.get("kind"), " ".join(record.get("command") or []),
            orjson.dumps(record.get("config")).decode(), orjson.dumps(record.get("final_metrics") or {}).decode(),
            record.get("error") or record.get("status_reason"), mtime_ns)


def index_run(root: Path, record: dict[str, Any], *, con: sqlite3.Connection | None = None) -> None:
    """Insert or replace one run's row (``run.json`` must already be written)."""
    own = con is None
    con = con or open_index(root)
    try:
        mtime = (root / record["id"] / "run.json").stat().st_mtime_ns
        con.execute(f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * 17)})", _row_of(record, mtime))
    finally:
        if own:
            con.close()


def write_run(root: Path, record: dict[str, Any]) -> None:
    """Write ``run.json`` atomically, then its index row."""
    write_json_atomic(root / record["id"] / "run.json", record)
    index_run(root, record)


def read_run(run_dir: Path) -> dict[str, Any]:
    """Read one ``run.json``.

    Raises:
        InputError: the file is missing or not valid JSON (naming the path).
    """
    path = run_dir / "run.json"
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError("run.json is missing", path=path) from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"run.json is not valid JSON ({exc})", path=path,
                         hint="the run is listed as broken; restore or delete the file") from None


def find_run_dir(root: Path, ref: str) -> Path:
    """The directory of the run ``ref``: an ID, a unique ID prefix, or a name (latest run of that name).

    Raises:
        UsageError: ``ref`` is not a valid name (e.g. ``../x``), or matches no run or several.
    """
    validate_name(ref, what="run ID or name")
    direct = root / ref
    if (direct / "run.json").exists() or direct.is_dir():
        return direct
    con = open_index(root)
    try:
        by_name = con.execute("SELECT id FROM runs WHERE name = ? ORDER BY created_at DESC, id DESC", (ref,)).fetchall()
        if by_name:
            return root / by_name[0][0]
        by_prefix = con.execute("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\'",
                                (ref.replace("_", "\\_") + "%",)).fetchall()
    finally:
        con.close()
    if len(by_prefix) == 1:
        return root / by_prefix[0][0]
    if by_prefix:
        raise UsageError(f"run {ref!r} is ambiguous: {', '.join(r[0] for r in by_prefix[:5])}",
                         hint="give more characters of the ID")
    raise UsageError(f"no run {ref!r} in {root}", hint="list the runs with `expkit runs ls`")


@dataclass(frozen=True)
class RunSummary:
    """One row of ``ls``. ``final_metrics`` are the last logged value of each metric."""

    id: str
    name: str | None
    status: str
    created_at: str | None
    ended_at: str | None
    kind: str | None
    commit: str | None
    dirty: bool | None
    seed: int | None
    group: str | None
    final_metrics: dict[str, Any]
    status_reason: str | None = None


@dataclass(frozen=True)
class BrokenRun:
    """A run directory whose ``run.json`` cannot be read; ``ls`` names it and lists the rest."""

    id: str
    path: str
    error: str


@dataclass(frozen=True)
class RunListing:
    store: str
    runs: tuple[RunSummary, ...]
    broken: tuple[BrokenRun, ...]


def _pid_alive(pid: int | None, create_time: float | None) -> bool:
    import psutil

    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if create_time is not None and abs(proc.create_time() - create_time) > 1.0:
            return False  # the pid was reused by another process
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def resolve_status(root: Path, record: dict[str, Any]) -> dict[str, Any]:
    """Turn a ``running`` record whose process is gone into ``lost`` and write that back.

    Same host: the recorded pid (and its start time) must still be alive. Another host: the heartbeat
    must be younger than HEARTBEAT_STALE_S.
    """
    import platform

    if record.get("status") != "running":
        return record
    run_dir = root / record["id"]
    try:
        beat = (run_dir / "heartbeat").stat().st_mtime
    except OSError:
        beat = record.get("created_unix") or 0.0
    age = time.time() - beat
    host = (record.get("hardware") or {}).get("hostname") or record.get("host")
    if host == platform.node():
        if _pid_alive(record.get("pid"), record.get("pid_create_time")):
            return record
        reason = f"process {record.get('pid')} is gone without closing the run; last heartbeat {age:.0f} s ago"
    else:
        if age < HEARTBEAT_STALE_S:
            return record
        reason = f"no heartbeat for {age:.0f} s (over {HEARTBEAT_STALE_S:.0f} s) from host {host}"
    fresh = read_run(run_dir)  # it may have finished between our reads
    if fresh.get("status") != "running":
        return fresh
    fresh.update(status="lost", status_reason=reason, ended_at=_iso(beat))
    write_run(root, fresh)
    return fresh


def _iso(unix_s: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(unix_s, timezone.utc).isoformat(timespec="milliseconds")


def _reconcile(root: Path, con: sqlite3.Connection) -> list[BrokenRun]:
    """Bring the index in line with the run directories; return the unreadable ones."""
    known = {r[0]: r[1] for r in con.execute("SELECT id, run_json_mtime_ns FROM runs")}
    broken: list[BrokenRun] = []
    seen: set[str] = set()
    with os.scandir(root) as it:
        for entry in it:
            if entry.name.startswith(".") or entry.name == "groups" or not entry.is_dir():
                continue
            seen.add(entry.name)
            try:
                mtime = os.stat(os.path.join(entry.path, "run.json")).st_mtime_ns
            except FileNotFoundError:
                continue  # a run being created, or not a run directory
            if known.get(entry.name) == mtime:
                continue
            try:
                record = read_run(Path(entry.path))
                if record.get("id") != entry.name:
                    raise InputError(f"run.json names id {record.get('id')!r}, not its directory",
                                     path=Path(entry.path) / "run.json")
            except InputError as exc:
                con.execute("INSERT OR REPLACE INTO runs (id, status, error, run_json_mtime_ns) VALUES (?,?,?,?)",
                            (entry.name, "broken", str(exc), mtime))
                continue
            con.execute(f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * 17)})", _row_of(record, mtime))
    for gone in set(known) - seen:
        con.execute("DELETE FROM runs WHERE id = ?", (gone,))
    for rid, err in con.execute("SELECT id, error FROM runs WHERE status = 'broken'"):
        broken.append(BrokenRun(id=rid, path=str(root / rid / "run.json"), error=err or ""))
    return broken


_OPS = ("!=", ">=", "<=", "=", ">", "<")


def _where_sql(clauses: list[str] | tuple[str, ...]) -> tuple[str, list[Any]]:
    sql, args = [], []
    for clause in clauses:
        op = next((o for o in _OPS if o in clause), None)
        if op is None:
            raise UsageError(f"--where {clause!r} has no operator", hint="write KEY=VALUE, KEY>VALUE, ...")
        key, value = (p.strip() for p in clause.split(op, 1))
        if key.startswith("config."):
            col, jkey = "config", key[len("config."):]
        elif key.startswith("metric."):
            col, jkey = "final_metrics", key[len("metric."):]
        elif key in _COLUMNS:
            col, jkey = _COLUMNS[key], None
        else:
            raise UsageError(f"--where key {key!r} is unknown",
                             hint=f"use one of {', '.join(_COLUMNS)}, config.KEY or metric.KEY")
        if jkey is not None and not re.match(r"^[A-Za-z0-9_.\-]+$", jkey):
            raise UsageError(f"--where key {key!r} has characters outside [A-Za-z0-9_.-]")
        try:
            parsed: Any = orjson.loads(value)
            if isinstance(parsed, bool):
                parsed = int(parsed)
            elif not isinstance(parsed, (int, float, str)):
                parsed = value
        except orjson.JSONDecodeError:
            parsed = value
        expr = f"json_extract({col}, '$.{jkey}')" if jkey is not None else col
        sql.append(f"{expr} {op} ?")
        args.append(parsed)
    return (" WHERE " + " AND ".join(sql)) if sql else "", args


def list_runs(store: str | os.PathLike[str] | None = None, *, where: list[str] | tuple[str, ...] = (),
              limit: int | None = None) -> RunListing:
    """List runs, newest first, after reconciling the index with the run directories.

    Args:
        store: the store (default ``$EXPKIT_STORE`` or ``./runs``).
        where: filters ``KEY=VALUE`` (also ``!= > < >= <=``); KEY is a column (status, name, seed,
            commit, dirty, group, kind, hostname), ``config.a.b`` or ``metric.loss``.
        limit: at most this many rows (None: all).

    Returns:
        A RunListing with the runs and the broken run directories (named, not fatal).

    Example:
        >>> list_runs("runs", where=["config.lr=0.001", "status=finished"]).runs  # doctest: +SKIP
    """
    root = resolve_store(store)
    cond, args = _where_sql(where)  # a bad filter is an error even in an empty store
    if not root.exists():
        return RunListing(store=str(root), runs=(), broken=())
    con = open_index(root)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            broken = _reconcile(root, con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        running = [r[0] for r in con.execute("SELECT id FROM runs WHERE status = 'running'")]
        for rid in running:
            try:
                resolve_status(root, read_run(root / rid))
            except InputError:
                continue
        cond = cond + (" AND" if cond else " WHERE") + " status != 'broken'"
        sql = ("SELECT id, name, status, created_at, ended_at, kind, commit_sha, dirty, seed, grp, final_metrics, "
               f"error FROM runs{cond} ORDER BY created_at DESC, id DESC")
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = con.execute(sql, args).fetchall()
    finally:
        con.close()
    runs = tuple(
        RunSummary(id=r[0], name=r[1], status=r[2], created_at=r[3], ended_at=r[4], kind=r[5], commit=r[6],
                   dirty=None if r[7] is None else bool(r[7]), seed=r[8], group=r[9],
                   final_metrics=orjson.loads(r[10]) if r[10] else {},
                   status_reason=r[11].strip().splitlines()[-1] if r[11] else None)
        for r in rows
    )
    return RunListing(store=str(root), runs=runs, broken=tuple(broken))
