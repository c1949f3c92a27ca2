"""How deeply a JSON text nests, measured without recursion, so that a reader can refuse a file nested past
what its parser or validator can take with one line naming the file and the depth, not a RecursionError."""

from __future__ import annotations

import re
from pathlib import Path

from expkit.errors import InputError

__all__ = ["ORJSON_MAX_DEPTH", "json_nesting_depth", "too_deep"]

ORJSON_MAX_DEPTH = 1024
"""orjson refuses deeper documents ("depth limit exceeded"); the standard library's parser stops near
``sys.getrecursionlimit()`` (1000) with a RecursionError."""

_STRING_OR_BRACKET = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def json_nesting_depth(raw: bytes | str) -> int:
    """The deepest nesting of arrays and objects in a JSON text (brackets inside strings do not count).

    Example:
        >>> json_nesting_depth(b'{"a": [1, {"b": "[[["}]}')
        3
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    depth = deepest = 0
    for m in _STRING_OR_BRACKET.finditer(data):
        c = m.group()[:1]
        if c in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif c in (b"]", b"}"):
            depth -= 1
    return deepest


def too_deep(path: str | Path, depth: int, limit: int, what: str = "JSON") -> InputError:
    """The one-line error for a document nested ``depth`` levels, past ``limit``."""
    return InputError(
        f"{what} nested {depth:,} levels deep, more than the {limit:,} this reader takes",
        path=path,
        hint="no real file of this kind nests this deeply: check that it is the file you meant",
    )
