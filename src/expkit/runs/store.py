"""The embedded run store: one directory per run (``run.json`` is the truth) plus an SQLite index
(WAL, busy timeout) that keeps listing fast at thousands of runs and is rebuilt from the directories.

Status is resolved on read: a ``running`` run whose process is gone becomes ``lost``. The index is a
cache: a corrupt one is moved aside and rebuilt, a read-only one is replaced by an in-memory index for
the call; a run directory that cannot be read is named (``BrokenRun``) and the rest are listed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from expkit.errors import InputError, UsageError
from expkit.runs.files import NotRegularFileError, read_regular_bytes
from expkit.runs.runrecord import RunRecord

__all__ = [
    "HEARTBEAT_STALE_S",
    "BrokenRun",
    "RunListing",
    "RunSummary",
    "find_run_dir",
    "index_run",
    "list_runs",
    "open_index",
    "read_record",
    "read_run",
    "resolve_store",
    "validate_name",
    "varying_config_keys",
    "write_json_atomic",
    "write_record",
    "write_run",
]

DEFAULT_STORE = "runs"
INDEX_NAME = "index.sqlite"
# A heartbeat is written every second; a run on another host silent for 30 s is taken as lost.
HEARTBEAT_STALE_S = 30.0
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
_COLUMNS = {
    "id": "id",
    "name": "name",
    "status": "status",
    "seed": "seed",
    "commit": "commit_sha",
    "dirty": "dirty",
    "group": "grp",
    "kind": "kind",
    "hostname": "hostname",
    "created_at": "created_at",
}
# Bumped when the table changes; an index of another version is dropped and rebuilt (it is a cache).
INDEX_VERSION = 2
_N_COLS = 18
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, name TEXT, status TEXT, created_at TEXT, ended_at TEXT, pid INTEGER,
  hostname TEXT, commit_sha TEXT, dirty INTEGER, seed INTEGER, grp TEXT, kind TEXT, command TEXT,
  config TEXT, final_metrics TEXT, error TEXT, run_json_mtime_ns INTEGER, diverged INTEGER
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
CREATE INDEX IF NOT EXISTS runs_name ON runs(name);
"""


def resolve_store(store: str | os.PathLike[str] | None = None) -> Path:
    """The store directory: ``store``, else ``$EXPKIT_STORE``, else ``./runs``.

    Raises:
        UsageError: the path exists and is not a directory (``--store train.py``).
    """
    root = Path(store if store is not None else os.environ.get("EXPKIT_STORE") or DEFAULT_STORE).absolute()
    if root.exists() and not root.is_dir():
        raise UsageError(
            f"run store {str(root)!r} is a file, not a directory",
            hint="give the store as a directory (it is created when missing)",
        )
    return root


def validate_name(text: str, *, what: str = "run name") -> str:
    """Refuse names that could leave the store directory (``../x``, ``a/b``) or are empty.

    Raises:
        UsageError: naming the value and the allowed characters.
    """
    if not isinstance(text, str) or not _NAME_RE.match(text) or ".." in text:
        raise UsageError(
            f"{what} {text!r} is not allowed",
            hint="use letters, digits and . _ + - (no '/', no '..', at most 128 characters)",
        )
    return text


def _first_not_utf8(obj: Any) -> str | None:
    """The first string in ``obj`` (keys included) that cannot be UTF-8: a lone surrogate, which is how Python
    reads an argument or a file name whose bytes are not UTF-8 (``\\xff``)."""
    stack = [obj]
    while stack:  # iterative: a record may be deep
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to ``path`` through a temp file and ``os.replace`` (readers never see half a file).

    Raises:
        UsageError: a string that is not UTF-8 text (an argument with bytes like ``\\xff``): a record is strict
            JSON, which cannot hold it (round five of issue 36: ``runs exec -- echo $'\\xff'`` was exit 3).
    """
    try:
        data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:
        bad = _first_not_utf8(obj)
        if bad is None:
            raise
        try:  # \xff as the argument's byte; a surrogate that no byte gives (\ud800) as its code
            shown = bad.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            shown = bad.encode("utf-8", "backslashreplace").decode("utf-8")
        raise UsageError(
            f"'{shown[:200]}' is not UTF-8 text: a run record is strict JSON and cannot hold it",
            hint="rename the file to a UTF-8 name, or pass the value through a file or an environment variable",
        ) from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


Note = Callable[[str], None]


def _warn(note: str) -> None:
    warnings.warn(note, RuntimeWarning, stacklevel=3)


def _connect(path: Path | str) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    con.execute("PRAGMA busy_timeout=30000")
    if path != ":memory:":
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        if con.execute("PRAGMA user_version").fetchone()[0] != INDEX_VERSION:
            con.execute("DROP TABLE IF EXISTS runs")
            con.execute(f"PRAGMA user_version={INDEX_VERSION}")
    con.executescript(_SCHEMA)
    con.execute("SELECT count(*) FROM runs").fetchone()  # a corrupt file fails here at the latest
    return con


def open_index(root: Path, *, on_note: Note | None = None) -> sqlite3.Connection:
    """Open (and create) the index in WAL mode with a 30 s busy timeout.

    The index is a cache of the run directories: a corrupt file (truncated, random bytes) is moved
    aside to ``index.sqlite.corrupt`` and rebuilt; a store or index that cannot be written gives an
    in-memory index for this call. Either way ``on_note`` (default: a RuntimeWarning) says so.
    """
    note = on_note or _warn
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the run store ({exc.strerror})", path=root) from None
    path = root / INDEX_NAME
    try:
        return _connect(path)
    except sqlite3.DatabaseError as exc:
        corrupt = (
            not isinstance(exc, sqlite3.OperationalError) or "malformed" in str(exc) or "not a database" in str(exc)
        )
        if corrupt:
            try:
                os.replace(path, root / (INDEX_NAME + ".corrupt"))
                for suffix in ("-wal", "-shm"):
                    (root / (INDEX_NAME + suffix)).unlink(missing_ok=True)
                con = _connect(path)
                note(
                    f"the run index {path} was corrupt ({exc}); moved it to {INDEX_NAME}.corrupt and rebuilt it "
                    "from the run directories"
                )
                return con
            except (OSError, sqlite3.Error):
                pass
        note(f"the run index {path} cannot be used ({exc}); listing from the run directories in memory")
        return _connect(":memory:")


def _row_of(record: RunRecord, mtime_ns: int) -> tuple[Any, ...]:
    code, seed = record.code, record.seed
    return (
        record.id,
        record.name,
        record.status,
        record.created_at,
        record.ended_at,
        record.pid,
        record.hostname,
        code.commit if code else None,
        None if code is None or code.dirty is None else int(code.dirty),
        seed.seed if seed else None,
        record.group,
        record.kind,
        " ".join(record.command),
        orjson.dumps(record.config).decode(),
        orjson.dumps(record.final_metrics).decode(),
        record.error or record.status_reason,
        mtime_ns,
        int(record.diverged),
    )


class _KeptIndex(NamedTuple):
    pid: int
    file_id: tuple[int, int]  # (st_dev, st_ino) of index.sqlite: a replaced or deleted file is opened again
    con: sqlite3.Connection
    lock: threading.Lock


# Store root -> the connection this process writes index rows through. Opening one costs ~1 ms CPU and
# ~2 ms wall (connect, pragmas, schema check), twice a sweep trial; kept for the last KEPT_INDEXES stores.
_KEPT: dict[Path, _KeptIndex] = {}
_KEPT_LOCK = threading.Lock()
KEPT_INDEXES = 4


def _forget_kept_in_child() -> None:
    """After a fork: the lock may have been held by a thread the child does not have, and the connections are
    the parent's (kept referenced, never used or closed here); the child opens its own."""
    global _KEPT_LOCK, _INHERITED
    _KEPT_LOCK = threading.Lock()
    _INHERITED = list(_KEPT.values())
    _KEPT.clear()


_INHERITED: list[_KeptIndex] = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_kept_in_child)


def _kept_index(root: Path) -> _KeptIndex:
    """This process's open connection to ``root``'s index, opened (or opened again) when there is none for
    this pid or the index file is not the one it was opened on (rebuilt after corruption, store deleted)."""
    st = os.stat(root / INDEX_NAME) if (root / INDEX_NAME).exists() else None
    with _KEPT_LOCK:
        kept = _KEPT.get(root)
        if kept is not None and kept.pid == os.getpid() and st is not None and kept.file_id == (st.st_dev, st.st_ino):
            return kept
        if kept is not None:
            _KEPT.pop(root)
            if kept.pid == os.getpid():
                with kept.lock, contextlib.suppress(sqlite3.Error):
                    kept.con.close()
        con = open_index(root)
        con.close()  # opened once to create or repair it; the kept one may be used from any thread
        con = sqlite3.connect(root / INDEX_NAME, timeout=30.0, isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA busy_timeout=30000")
        con.execute("PRAGMA synchronous=NORMAL")  # as open_index: WAL commits without an fsync each
        st = os.stat(root / INDEX_NAME)
        kept = _KeptIndex(os.getpid(), (st.st_dev, st.st_ino), con, threading.Lock())
        _KEPT[root] = kept
        while len(_KEPT) > KEPT_INDEXES:
            old = _KEPT.pop(next(iter(_KEPT)))
            if old.pid == os.getpid():
                with old.lock, contextlib.suppress(sqlite3.Error):
                    old.con.close()
        return kept


def index_run(root: Path, record: RunRecord | dict[str, Any], *, con: sqlite3.Connection | None = None) -> None:
    """Insert or replace one run's row (``run.json`` must already be written), through ``con`` or this
    process's kept connection to the store's index. An index that cannot be written is left as is: it is
    a cache, and the next listing reconciles it by ``run.json`` mtime."""
    rec = record if isinstance(record, RunRecord) else RunRecord.from_json(record)
    sql = f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * _N_COLS)})"
    try:
        mtime = (root / rec.id / "run.json").stat().st_mtime_ns
        if con is not None:
            con.execute(sql, _row_of(rec, mtime))
            return
        kept = _kept_index(root)
        try:
            with kept.lock:
                kept.con.execute(sql, _row_of(rec, mtime))
        except sqlite3.Error:  # overwritten in place, locked for 30 s ...: the next write opens (and repairs) it
            with _KEPT_LOCK:
                if _KEPT.get(root) is kept:
                    _KEPT.pop(root)
            with kept.lock, contextlib.suppress(sqlite3.Error):
                kept.con.close()
            raise
    except (sqlite3.Error, OSError):
        return


def write_record(root: Path, record: RunRecord) -> None:
    """Write ``run.json`` atomically (through ``RunRecord.to_json``), then its index row."""
    write_json_atomic(root / record.id / "run.json", record.to_json())
    index_run(root, record)


def write_run(root: Path, record: RunRecord | dict[str, Any]) -> None:
    """``write_record`` for a record or a ``run.json``-shaped dict (checked through ``RunRecord``)."""
    rec = record if isinstance(record, RunRecord) else RunRecord.from_json(record, path=root / str(record.get("id")))
    write_record(root, rec)


def read_record(run_dir: Path) -> RunRecord:
    """Read and check one ``run.json``.

    Raises:
        InputError: the file is missing, unreadable, not valid JSON, not an object, or has an unknown
            or mistyped field (naming the run, the field and the path).
    """
    path = run_dir / "run.json"
    try:
        raw = read_regular_bytes(path)
    except FileNotFoundError:
        raise InputError(
            "run.json is missing",
            path=path,
            hint="the run directory holds no record; restore run.json or delete the directory",
        ) from None
    except NotRegularFileError as exc:
        raise InputError(
            f"run.json is {exc.strerror}: reading it could block for ever",
            path=path,
            hint="the run is listed as broken; replace it by the run's record or delete the run directory",
        ) from None
    except OSError as exc:
        raise InputError(
            f"run.json cannot be read ({exc.strerror})", path=path, hint="check the permissions of the run directory"
        ) from None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(
            f"run.json is not valid JSON ({exc})",
            path=path,
            hint="the run is listed as broken; restore or delete the file",
        ) from None
    return RunRecord.from_json(obj, path=path)


def read_run(run_dir: Path) -> dict[str, Any]:
    """One ``run.json`` as a checked dict (``read_record(run_dir).to_json()``), for callers that
    predate ``RunRecord``.

    Raises:
        InputError: as ``read_record``.
    """
    return read_record(run_dir).to_json()


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
        for attempt in range(2):
            by_name = con.execute(
                "SELECT id FROM runs WHERE name = ? ORDER BY created_at DESC, id DESC", (ref,)
            ).fetchall()
            if by_name:
                return root / by_name[0][0]
            by_prefix = con.execute(
                "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\'", (ref.replace("_", "\\_") + "%",)
            ).fetchall()
            if by_prefix or attempt:
                break
            con.close()  # not in the index: it may be stale (rebuilt, or read-only while runs were written)
            con, _ = _reconciled_index(root, [])
    finally:
        con.close()
    if len(by_prefix) == 1:
        return root / by_prefix[0][0]
    if by_prefix:
        raise UsageError(
            f"run {ref!r} is ambiguous: {', '.join(r[0] for r in by_prefix[:5])}", hint="give more characters of the ID"
        )
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
    diverged: bool = False
    hostname: str | None = None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokenRun:
    """A run directory whose ``run.json`` cannot be read; ``ls`` names it and lists the rest."""

    id: str
    path: str
    error: str


@dataclass(frozen=True)
class RunListing:
    """The runs that could be read, the run directories that could not, and notes on the index."""

    store: str
    runs: tuple[RunSummary, ...]
    broken: tuple[BrokenRun, ...]
    notes: tuple[str, ...] = ()
    varying_config: dict[str, tuple[str, ...]] = field(default_factory=dict)


def varying_config_keys(runs: tuple[RunSummary, ...]) -> dict[str, tuple[str, ...]]:
    """Group -> the top-level config keys whose values differ between the group's runs (a sweep's grid
    keys: what tells its trials apart), in the order the first run lists them; groups where none differ
    are left out.

    Example:
        >>> rs = tuple(RunSummary(str(i), None, "finished", None, None, None, None, None, 0, "g", {},
        ...            config={"lr": lr, "bs": 8}) for i, lr in enumerate([0.1, 0.2]))
        >>> varying_config_keys(rs)
        {'g': ('lr',)}
    """
    by_group: dict[str, list[RunSummary]] = {}
    for r in runs:
        if r.group is not None:
            by_group.setdefault(r.group, []).append(r)
    out: dict[str, tuple[str, ...]] = {}
    for group, members in by_group.items():
        keys = dict.fromkeys(k for r in members for k in r.config)
        varying = tuple(
            k for k in keys if len({orjson.dumps(r.config.get(k), option=orjson.OPT_SORT_KEYS) for r in members}) > 1
        )
        if len(members) > 1 and varying:
            out[group] = varying
    return out


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


def resolve_status(root: Path, record: RunRecord | dict[str, Any]) -> RunRecord:
    """Turn a ``running`` record whose process is gone into ``lost`` and write that back; its final
    metrics are then what reached ``metrics.jsonl`` (and the other ranks' files).

    Same host: the recorded pid (and its start time) must still be alive. Another host: the heartbeat
    must be younger than HEARTBEAT_STALE_S.
    """
    import platform

    rec = record if isinstance(record, RunRecord) else RunRecord.from_json(record)
    if rec.status != "running":
        return rec
    run_dir = root / rec.id
    try:
        beat = (run_dir / "heartbeat").stat().st_mtime
    except OSError:
        beat = rec.created_unix or 0.0
    age = time.time() - beat
    host = rec.hostname
    if host == platform.node():
        if _pid_alive(rec.pid, rec.pid_create_time):
            return rec
        reason = f"process {rec.pid} is gone without closing the run; last heartbeat {age:.0f} s ago"
    else:
        if age < HEARTBEAT_STALE_S:
            return rec
        reason = f"no heartbeat for {age:.0f} s (over {HEARTBEAT_STALE_S:.0f} s) from host {host}"
    fresh = read_record(run_dir)  # it may have finished between our reads
    if fresh.status != "running":
        return fresh
    from expkit.runs.metrics import summarize_metrics

    summary = summarize_metrics(run_dir)
    fresh = dataclasses.replace(
        fresh,
        status="lost",
        status_reason=reason,
        ended_at=_iso(beat),
        final_metrics=summary.final or fresh.final_metrics,
        final_metrics_by_rank=summary.by_rank or fresh.final_metrics_by_rank,
        diverged=fresh.diverged or summary.diverged_at is not None,
        diverged_at=fresh.diverged_at or summary.diverged_at,
    )
    with contextlib.suppress(OSError):  # a read-only store: the status is still shown as lost
        write_record(root, fresh)
    return fresh


def _iso(unix_s: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(unix_s, timezone.utc).isoformat(timespec="milliseconds")


# A run directory without run.json younger than this is being created (start() writes it within ~1 s).
_CREATING_GRACE_S = 60.0


def _reconcile(root: Path, con: sqlite3.Connection) -> list[BrokenRun]:
    """Bring the index in line with the run directories; return the unreadable ones."""
    known = {r[0]: r[1] for r in con.execute("SELECT id, run_json_mtime_ns FROM runs")}
    seen: set[str] = set()

    def broken(name: str, error: str, mtime: int | None) -> None:
        con.execute(
            "INSERT OR REPLACE INTO runs (id, status, error, run_json_mtime_ns) VALUES (?,?,?,?)",
            (name, "broken", error, mtime),
        )

    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        raise InputError(
            f"cannot list the run store ({exc.strerror})",
            path=root,
            hint="check the permissions of the store directory",
        ) from None
    for entry in entries:
        try:
            if entry.name.startswith(".") or entry.name == "groups" or not entry.is_dir():
                continue
        except OSError:
            continue
        seen.add(entry.name)
        run_json = os.path.join(entry.path, "run.json")
        try:
            mtime = os.stat(run_json).st_mtime_ns
        except FileNotFoundError:
            try:
                age = time.time() - entry.stat().st_mtime
            except OSError:
                age = 0.0
            if entry.name in known or age > _CREATING_GRACE_S:
                broken(entry.name, f"{run_json}: run.json is missing (deleted?); the run's status is unknown", None)
            continue
        except OSError as exc:
            broken(entry.name, f"{entry.path}: cannot be read ({exc.strerror})", None)
            continue
        if known.get(entry.name) == mtime:
            continue
        try:
            record = read_record(Path(entry.path))
            if record.id != entry.name:
                raise InputError(
                    f"run.json names id {record.id!r}, not its directory", path=Path(entry.path) / "run.json"
                )
        except InputError as exc:
            broken(entry.name, str(exc), mtime)
            continue
        con.execute(f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * _N_COLS)})", _row_of(record, mtime))
    for gone in set(known) - seen:
        con.execute("DELETE FROM runs WHERE id = ?", (gone,))
    return [
        BrokenRun(id=rid, path=str(root / rid / "run.json"), error=err or "")
        for rid, err in con.execute("SELECT id, error FROM runs WHERE status = 'broken' ORDER BY id")
    ]


def _reconciled_index(root: Path, notes: list[str]) -> tuple[sqlite3.Connection, list[BrokenRun]]:
    """The index brought in line with the run directories, and the unreadable runs. An index that
    cannot be written is replaced by one in memory (noted)."""
    con = open_index(root, on_note=notes.append)
    for attempt in range(2):
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                broken = _reconcile(root, con)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            return con, broken
        except sqlite3.OperationalError as exc:  # read-only index or store: list from memory
            con.close()
            if attempt:
                raise
            notes.append(f"the run index cannot be written ({exc}); listed from the run directories in memory")
            con = _connect(":memory:")
    raise AssertionError("unreachable")


_OPS = ("!=", ">=", "<=", "=", ">", "<")


def _where_sql(clauses: list[str] | tuple[str, ...]) -> tuple[str, list[Any]]:
    sql, args = [], []
    for clause in clauses:
        op = next((o for o in _OPS if o in clause), None)
        if op is None:
            raise UsageError(f"where clause {clause!r} has no operator", hint="write KEY=VALUE, KEY>VALUE, ...")
        key, value = (p.strip() for p in clause.split(op, 1))
        if key.startswith("config."):
            col, jkey = "config", key[len("config.") :]
        elif key.startswith("metric."):
            col, jkey = "final_metrics", key[len("metric.") :]
        elif key in _COLUMNS:
            col, jkey = _COLUMNS[key], None
        else:
            raise UsageError(
                f"where key {key!r} is unknown", hint=f"use one of {', '.join(_COLUMNS)}, config.KEY or metric.KEY"
            )
        if jkey is not None and not re.match(r"^[A-Za-z0-9_.\-]+$", jkey):
            raise UsageError(f"where key {key!r} has characters outside [A-Za-z0-9_.-]")
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


def list_runs(
    store: str | os.PathLike[str] | None = None, *, where: list[str] | tuple[str, ...] = (), limit: int | None = None
) -> RunListing:
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
    notes: list[str] = []
    con, broken = _reconciled_index(root, notes)
    try:
        running = [r[0] for r in con.execute("SELECT id FROM runs WHERE status = 'running'")]
        for rid in running:
            try:
                fresh = resolve_status(root, read_record(root / rid))
            except InputError:
                continue
            if fresh.status != "running":  # the index may be read-only: update this connection's view
                mtime = (root / rid / "run.json").stat().st_mtime_ns
                con.execute(f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * _N_COLS)})", _row_of(fresh, mtime))
        cond = cond + (" AND" if cond else " WHERE") + " status != 'broken'"
        sql = (
            "SELECT id, name, status, created_at, ended_at, kind, commit_sha, dirty, seed, grp, final_metrics, "
            f"error, diverged, hostname, config FROM runs{cond} ORDER BY created_at DESC, id DESC"
        )
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = con.execute(sql, args).fetchall()
    finally:
        con.close()
    runs = tuple(
        RunSummary(
            id=r[0],
            name=r[1],
            status=r[2],
            created_at=r[3],
            ended_at=r[4],
            kind=r[5],
            commit=r[6],
            dirty=None if r[7] is None else bool(r[7]),
            seed=r[8],
            group=r[9],
            final_metrics=orjson.loads(r[10]) if r[10] else {},
            status_reason=r[11].strip().splitlines()[-1] if r[11] else None,
            diverged=bool(r[12]),
            hostname=r[13],
            config=_config_of_row(r[14]),
        )
        for r in rows
    )
    return RunListing(
        store=str(root), runs=runs, broken=tuple(broken), notes=tuple(notes), varying_config=varying_config_keys(runs)
    )


def _config_of_row(text: str | None) -> dict[str, Any]:
    cfg = orjson.loads(text) if text else {}
    return cfg if isinstance(cfg, dict) else {}
