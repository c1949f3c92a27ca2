"""Dataclasses to JSON with orjson: the ``--json`` output of every command is the result dataclass."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson

__all__ = ["dumps", "to_jsonable"]


def _default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _finite(obj: Any) -> Any:
    """orjson writes NaN/inf as null silently; we keep them visible as strings."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def to_jsonable(obj: Any) -> Any:
    """A plain JSON-able structure (dicts, lists, numbers, strings) for ``obj``."""
    return _finite(orjson.loads(orjson.dumps(obj, default=_default, option=orjson.OPT_SERIALIZE_NUMPY)))


def dumps(obj: Any, *, indent: bool = True) -> str:
    """JSON text for a dataclass (or any nesting of them), NaN/inf kept as strings."""
    opt = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(to_jsonable(obj), option=opt | orjson.OPT_NON_STR_KEYS).decode()
