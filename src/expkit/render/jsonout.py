"""Dataclasses to JSON with orjson, and the one ``--json`` envelope of every command.

Success: ``{"command": "stats ci", "version": "0.1.0", "result": {...}}``.
Failure: ``{"command": "stats ci", "version": "0.1.0", "error": {"kind": ..., "message": ..., "where": ...}}``
with the same exit code as the plain-text run (1 a failed check, 2 bad input, 3 an internal error).
An object may say how it is written by a ``__json__()`` method (a lab rule writes its text).

Strict JSON for any text (issue 35): the output of :func:`dumps` parses with a strict parser (Python's
``json.loads(strict=True)``, orjson, jq) whatever strings the result holds. It is never passed through the
terminal sanitizer (``\\x7f`` written by the sanitizer is an invalid JSON escape); JSON escaping alone keeps
it safe: orjson escapes U+0000-U+001F (ESC included), and DEL and the C1 controls U+007F-U+009F, which JSON
allows raw but some terminals obey, are written as ``\\u007f``...``\\u009f``. A lone surrogate (a file name
with undecodable bytes, read with Python's surrogateescape; a ``\\ud800`` in a record) is not a Unicode
character, cannot be encoded as UTF-8, and orjson refuses a ``\\ud800`` escape when it reads one back: each is
replaced by U+FFFD, the replacement character (the human output shows the byte instead, ``\\xff``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import orjson

__all__ = ["ascii_json", "dumps", "envelope", "error_envelope", "json_safe", "to_jsonable"]

# Characters JSON allows raw in a string that a terminal may act on (DEL, the C1 controls) or that a
# JavaScript reader breaks lines at (U+2028/9): outside strings JSON text is ASCII, so every match is in one.
_RAW_CONTROL = re.compile("[\x7f-\x9f\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NON_ASCII = re.compile("[^\x00-\x7f]")


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
    """orjson writes NaN/inf as null silently; we keep them visible as strings ("nan", "inf"). Dicts, lists and
    tuples are copied with an explicit stack, not recursion: a user's record may nest ~1,000 levels deep."""

    def leaf(value: Any) -> Any:
        return str(value) if isinstance(value, float) and not math.isfinite(value) else value

    if not isinstance(obj, (dict, list, tuple)):
        return leaf(obj)
    top: dict[Any, Any] | list[Any] = {} if isinstance(obj, dict) else []
    stack: list[tuple[Any, dict[Any, Any] | list[Any]]] = [(obj, top)]
    while stack:
        source, copy = stack.pop()
        for key, value in source.items() if isinstance(source, dict) else enumerate(source):
            child: Any = value
            if isinstance(value, (dict, list, tuple)):
                child = {} if isinstance(value, dict) else []
                stack.append((value, child))
            else:
                child = leaf(value)
            if isinstance(copy, dict):
                copy[key] = child
            else:
                copy.append(child)
    return top


def to_jsonable(obj: Any) -> Any:
    """A plain JSON-able structure (dicts, lists, numbers, strings) for ``obj``."""
    opt = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS
    return orjson.loads(orjson.dumps(_finite(obj), default=_default, option=opt))


def json_safe(text: str) -> str:
    r"""JSON text (as written by orjson or ``json.dumps(ensure_ascii=False)``) with DEL, the C1 controls and
    U+2028/9 escaped and lone surrogates replaced by U+FFFD: the same JSON, strict for every parser.

    Example:
        >>> json_safe('{"t": "a\x7fb"}')
        '{"t": "a\\u007fb"}'
    """
    text = _RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return _SURROGATE.sub("\ufffd", text)


def ascii_json(text: str) -> str:
    r"""JSON text with every non-ASCII character escaped (astral ones as a surrogate pair), for a stdout
    whose encoding is not UTF-8 (``PYTHONIOENCODING=ascii``, a Latin-1 locale).

    Example:
        >>> ascii_json('{"t": "é😀"}')
        '{"t": "\\u00e9\\ud83d\\ude00"}'
    """

    def escape(m: re.Match[str]) -> str:
        code = ord(m.group())
        if code < 0x10000:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

    return _NON_ASCII.sub(escape, text)


def dumps(obj: Any, *, indent: bool = True) -> str:
    """Strict JSON text for a dataclass (or any nesting of them), NaN/inf kept as strings (see the module
    docstring for control characters and lone surrogates). Integers beyond 64 bits (a user's record
    holding 2**70), strings with lone surrogates and nesting past orjson's 254 levels are written by the
    standard library's encoder, which orjson refuses."""
    opt = orjson.OPT_INDENT_2 if indent else 0
    try:
        return json_safe(orjson.dumps(to_jsonable(obj), option=opt | orjson.OPT_NON_STR_KEYS).decode())
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        if not any(why in str(exc) for why in ("64-bit", "surrogates", "Recursion limit")):
            raise
    import json

    try:
        text = json.dumps(
            _finite(obj), default=_default, indent=2 if indent else None, ensure_ascii=False, allow_nan=False
        )
    except RecursionError:
        from expkit.errors import InputError

        raise InputError(
            "the result is nested too deep to write as JSON", hint="run without --json, or flatten the input"
        ) from None
    return json_safe(text)


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
