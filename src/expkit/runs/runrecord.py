"""``run.json`` as one typed, versioned record: :class:`RunRecord` with ``from_json``/``to_json``.

Every reader and writer of ``run.json`` goes through this class, so a schema change fails in one
place: an unknown field or a value of the wrong type is an ``InputError`` naming the run and the
field (``run 20260101-...: field 'seed.seed' is a str ('x'), expected int``).

Schema history: 1 (expkit <= 0.x: free dict, extra keys at the top level), 2 (this class; extra keys
live under ``extra``). A version-1 file is read (its unknown top-level keys move to ``extra``); a file
from a newer schema is refused with the version it carries.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expkit.errors import InputError
from expkit.runs.codestate import CodeRecord
from expkit.runs.environment import EnvironmentRecord, SeedRecord
from expkit.runs.fingerprint import DataFingerprint
from expkit.runs.machine import MachineInfo

__all__ = ["SCHEMA_VERSION", "ArtifactEntry", "CheckpointEntry", "LogsRecord", "RunRecord", "from_jsonable"]

SCHEMA_VERSION = 2


@dataclass(frozen=True)
class LogsRecord:
    """Where the logs of a run are, relative to its directory (``output`` is None for ``runs start``)."""

    metrics: str = "metrics.jsonl"
    output: str | None = None
    checkpoints: str = "checkpoints/"


@dataclass(frozen=True)
class CheckpointEntry:
    """One saved checkpoint: its name, files (under ``checkpoints/`` unless ``path`` says where), step."""

    name: str
    files: tuple[str, ...] = ()
    step: int | None = None
    path: str | None = None


@dataclass(frozen=True)
class ArtifactEntry:
    """One file copied into ``artifacts/`` with its size and sha256."""

    name: str
    source: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """The whole ``run.json``: identity and status, the seven records, and how the run ended.

    ``status`` is ``running``, ``finished``, ``failed``, ``killed``, ``lost`` (its process died without
    closing it) or ``broken`` (only in listings). ``diverged`` is True when a logged loss or gradient
    norm was NaN or infinite (``diverged_at`` says where); the status stays what the process did.
    ``config_notes`` says what ``start()`` changed to store the config (non-string keys as strings);
    ``metric_notes`` how metrics were read (e.g. steps counted for Trainer lines without one).
    ``final_metrics_by_rank`` holds the last values of ranks other than 0 (rank 0 owns ``final_metrics``).
    """

    id: str
    status: str
    schema: int = SCHEMA_VERSION
    name: str | None = None
    group: str | None = None
    kind: str | None = None
    created_at: str | None = None
    created_unix: float | None = None
    ended_at: str | None = None
    pid: int | None = None
    pid_create_time: float | None = None
    host: str | None = None
    command: tuple[str, ...] = ()
    cwd: str | None = None
    world_size: int = 1
    code: CodeRecord | None = None
    data: tuple[DataFingerprint, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    config_notes: tuple[str, ...] = ()
    environment: EnvironmentRecord | None = None
    seed: SeedRecord | None = None
    hardware: MachineInfo | None = None
    logs: LogsRecord = field(default_factory=LogsRecord)
    final_metrics: dict[str, Any] = field(default_factory=dict)
    final_metrics_by_rank: dict[str, dict[str, Any]] = field(default_factory=dict)
    metric_notes: tuple[str, ...] = ()
    diverged: bool = False
    diverged_at: str | None = None
    error: str | None = None
    status_reason: str | None = None
    signal: str | None = None
    exit_code: int | None = None
    elapsed_s: float | None = None
    capture_s: float | None = None
    checkpoints: tuple[CheckpointEntry, ...] = ()
    artifacts: tuple[ArtifactEntry, ...] = ()
    attached: bool = False
    attached_error: str | None = None
    integration: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hostname(self) -> str | None:
        """The host the run started on (hardware record, else the top-level ``host``)."""
        return (self.hardware.hostname if self.hardware else None) or self.host

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (tuples as lists), the inverse of :meth:`from_json`."""
        return _to_jsonable(self)

    @classmethod
    def from_json(cls, obj: Any, *, path: Path | None = None) -> RunRecord:
        """Read a ``run.json`` object.

        Args:
            obj: the parsed JSON.
            path: the file it came from (named in errors).

        Raises:
            InputError: not an object, no ``id``, a newer schema, an unknown field (schema 2) or a
                value of the wrong type, naming the run and the field.
        """
        if not isinstance(obj, dict):
            raise InputError(
                f"run.json holds a JSON {type(obj).__name__}, not an object",
                path=path,
                hint="restore the file or delete the run directory",
            )
        run_id = obj.get("id")
        run = run_id if isinstance(run_id, str) else (path.parent.name if path else "?")
        schema = obj.get("schema", 1)
        if type(schema) is not int or schema < 1:
            raise InputError(f"run {run}: field 'schema' is {schema!r}, expected a positive int", path=path)
        if schema > SCHEMA_VERSION:
            raise InputError(
                f"run {run}: run.json has schema {schema}; this expkit reads up to {SCHEMA_VERSION}",
                path=path,
                hint="upgrade expkit to read it",
            )
        data = dict(obj)
        if schema == 1:  # free-form era: extra keys lived at the top level
            known = {f.name for f in dataclasses.fields(cls)}
            extra = dict(data.get("extra") or {}) if isinstance(data.get("extra"), dict) else {}
            for key in [k for k in data if k not in known]:
                extra[key] = data.pop(key)
            data["extra"] = extra
            data["schema"] = SCHEMA_VERSION
        return from_jsonable(cls, data, where="", run=run, path=path)


# --- the one converter: dataclass <-> JSON, checked against the annotations ----------------------


def _to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    return value


_HINTS: dict[type, dict[str, Any]] = {}
# Item types whose JSON values need no conversion, and the Python types accepted as they are.
_SIMPLE: dict[Any, tuple[type, ...]] = {str: (str,), int: (int,), bool: (bool,)}
_SIMPLE_OR_NONE: dict[Any, tuple[type, ...]] = {
    **_SIMPLE,
    Any: (str, int, float, bool, type(None), dict, list),
    str | None: (str, type(None)),
    int | None: (int, type(None)),
    bool | None: (bool, type(None)),
}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _bad(value: Any, want: str, where: str, run: str, path: Path | None) -> InputError:
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return InputError(
        f"run {run}: field {where!r} is a {type(value).__name__} ({shown}), expected {want}",
        path=path,
        hint="restore run.json (the run is listed as broken until then)",
    )


def _convert(tp: Any, value: Any, where: str, run: str, path: Path | None) -> Any:
    if tp in _SIMPLE_OR_NONE and type(value) in _SIMPLE_OR_NONE[tp]:  # the common case, without typing calls
        return value
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, where, run, path)
            except InputError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise _bad(value, " or ".join(getattr(a, "__name__", str(a)) for a in args), where, run, path)
    if tp is bool:
        if type(value) is not bool:
            raise _bad(value, "bool", where, run, path)
        return value
    if tp is int:
        if type(value) is not int:
            raise _bad(value, "int", where, run, path)
        return value
    if tp is float:
        if type(value) not in (int, float):
            raise _bad(value, "float", where, run, path)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _bad(value, "str", where, run, path)
        return value
    if origin is tuple or origin is list:
        if not isinstance(value, list | tuple):
            raise _bad(value, "a list", where, run, path)
        (item,) = typing.get_args(tp)[:1]
        if item in _SIMPLE and all(type(v) in _SIMPLE[item] for v in value):  # fast path: nothing to convert
            return tuple(value)
        return tuple(_convert(item, v, f"{where}[{i}]", run, path) for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise _bad(value, "an object", where, run, path)
        _, item = typing.get_args(tp)
        if item is Any or (item in _SIMPLE and all(type(v) in _SIMPLE[item] for v in value.values())):
            return value  # fast path (a package list holds hundreds of strings)
        return {k: _convert(item, v, f"{where}.{k}", run, path) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return from_jsonable(typing.cast(type, tp), value, where=where, run=run, path=path)
    raise TypeError(f"no JSON conversion for {tp!r} at {where}")  # a programming error, not bad input


def from_jsonable(cls: type, obj: Any, *, where: str = "", run: str = "?", path: Path | None = None) -> Any:
    """Build dataclass ``cls`` from parsed JSON, checking every field against its annotation.

    Raises:
        InputError: an unknown field, a missing required field or a value of the wrong type, named
            by its dotted place (``code.commit``).
    """
    if not isinstance(obj, dict):
        raise _bad(obj, f"an object ({cls.__name__})", where or cls.__name__, run, path)
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(obj) - set(fields))
    if unknown:
        place = f"{where}.{unknown[0]}" if where else unknown[0]
        raise InputError(
            f"run {run}: unknown field {place!r} in run.json",
            path=path,
            hint="written by another expkit version, or edited by hand",
        )
    kwargs = {}
    for name, f in fields.items():
        place = f"{where}.{name}" if where else name
        if name not in obj:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise InputError(f"run {run}: field {place!r} is missing from run.json", path=path)
            continue
        kwargs[name] = _convert(hints[name], obj[name], place, run, path)
    return cls(**kwargs)
