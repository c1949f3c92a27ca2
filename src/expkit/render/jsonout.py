"""Dataclasses to JSON with orjson, and the one ``--json`` envelope of every command.

Success: ``{"command": "stats ci", "version": "0.1.0", "result": {...}}``.
Failure: ``{"command": "stats ci", "version": "0.1.0", "error": {"kind": ..., "message": ..., "where": ...}}``
with the same exit code as the plain-text run (1 a failed check, 2 bad input, 3 an internal error).
An object may say how it is written by a ``__json__()`` method (a lab rule writes its text).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import orjson

__all__ = ["dumps", "envelope", "error_envelope", "to_jsonable"]


def _default(obj: Any) -> Any:
    if hasattr(obj, "__json__"):
        return obj.__json__()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _finite({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return _finite(sorted(obj))
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return _finite(obj.tolist())
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _finite(obj: Any) -> Any:
    """orjson writes NaN/inf as null silently; we keep them visible as strings ("nan", "inf")."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def to_jsonable(obj: Any) -> Any:
    """A plain JSON-able structure (dicts, lists, numbers, strings) for ``obj``."""
    opt = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS
    return orjson.loads(orjson.dumps(_finite(obj), default=_default, option=opt))


def dumps(obj: Any, *, indent: bool = True) -> str:
    """JSON text for a dataclass (or any nesting of them), NaN/inf kept as strings. Integers beyond
    64 bits (a user's record holding 2**70) are written exactly by the standard library's encoder,
    which orjson refuses."""
    opt = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(to_jsonable(obj), option=opt | orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc):
            raise
        import json

        return json.dumps(_finite(obj), default=_default, indent=2 if indent else None, ensure_ascii=False)


def envelope(command: str, result: Any) -> str:
    """The ``--json`` text of a command that succeeded (or ran a check: the exit code says which)."""
    from expkit import __version__

    return dumps({"command": command, "version": __version__, "result": result})


def error_envelope(command: str, *, kind: str, message: str, where: str | None = None) -> str:
    """The ``--json`` text of a command that stopped on an error; ``kind`` is the exception class name
    (``InputError``, ``UsageError`` ...) or ``internal`` for a bug in expkit."""
    from expkit import __version__

    return dumps(
        {"command": command, "version": __version__, "error": {"kind": kind, "message": message, "where": where}}
    )
