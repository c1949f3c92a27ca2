"""Schema ``pattern`` matching in linear time: RE2 (Google's ``re2`` module) for every pattern it accepts,
so a nested quantifier such as ``^(a+)+$`` cannot backtrack without end, as it does in Python's ``re``.

JSON Schema's patterns are ECMA-262 regular expressions; Python's ``re`` (what ``jsonschema`` uses) and
RE2 each differ from ECMA-262 in places, and here is how they differ from each other:

- ``\\d``, ``\\w``, ``\\b`` are ASCII in RE2 (as in ECMA-262 without the ``u`` flag), Unicode in ``re``:
  ``^\\d+$`` no longer matches Arabic-Indic digits.
- ``$`` matches only at the end in RE2 (as in ECMA-262); ``re`` also matches before a final newline.
- ``\\s`` in RE2 is ``[\\t\\n\\f\\r ]``: no vertical tab, no Unicode spaces (both are ``\\s`` in ECMA-262
  and in ``re``).
- Lookaround (``(?=``, ``(?!``, ``(?<=``) and backreferences (``\\1``) do not exist in RE2: a pattern with
  them is matched by the ``regex`` module (``re``'s syntax and semantics), whose ``timeout`` stops a match
  after PATTERN_TIMEOUT_S; the validation then ends with an InputError naming the pattern (exit 2).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from typing import Any

from expkit.errors import InputError

__all__ = ["PATTERN_TIMEOUT_S", "pattern_search", "re2_patterns"]

PATTERN_TIMEOUT_S = 2.0
"""How long one match of a pattern RE2 cannot run (lookaround, backreferences) may take (``regex`` counts it
in CPU time; ``EXPKIT_PATTERN_TIMEOUT_S`` sets another): a backtracking match of a 50-character value ends in
microseconds, a catastrophic one never."""


class _Timed:
    """A pattern RE2 refused, matched by ``regex`` with a time limit (``search`` as ``re``'s)."""

    def __init__(self, pattern: str) -> None:
        import regex

        self.pattern, self.program = pattern, regex.compile(pattern)

    def search(self, text: str) -> Any:
        limit_s = float(os.environ.get("EXPKIT_PATTERN_TIMEOUT_S") or PATTERN_TIMEOUT_S)
        try:
            return self.program.search(text, timeout=limit_s)
        except TimeoutError:
            raise InputError(
                f"schema pattern {self.pattern!r} did not finish within {limit_s:g} s on a "
                f"{len(text):,}-character value (catastrophic backtracking)",
                hint="RE2 runs patterns in linear time but has no lookaround or backreferences: "
                "write the pattern without them",
            ) from None


_active = threading.local()


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    """The RE2 program for ``pattern``, or a timed ``regex`` one when RE2 refuses it (lookaround,
    backreferences). A pattern neither accepts raises ``re.error``, as ``re.search`` would."""
    import re2  # google-re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern falls back below; RE2 would print its parse error
    try:
        return re2.compile(pattern, options)
    except re2.error:
        re.compile(pattern)  # re's error for a pattern that is not a regex at all (jsonschema checks them first)
        return _Timed(pattern)


def pattern_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (``re.search`` semantics), by RE2 where it can.

    Example:
        >>> pattern_search("^(a+)+$", "a" * 5000 + "!")  # Python's re would not return
        False
    """
    return _compiled(pattern).search(text) is not None


class _ReShim:
    """Stands for the ``re`` module inside ``jsonschema``: ``search`` goes through ``pattern_search`` on a
    thread inside ``re2_patterns()``, to Python's ``re`` elsewhere; every other name is ``re``'s."""

    def search(self, pattern: Any, string: Any, flags: int = 0) -> Any:
        if getattr(_active, "on", False) and isinstance(pattern, str) and isinstance(string, str) and not flags:
            return _compiled(pattern).search(string)
        return re.search(pattern, string, flags)

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)


@functools.cache
def _install_shim() -> None:
    """Point ``jsonschema``'s keyword modules at the shim (once): ``pattern``, ``patternProperties``,
    ``additionalProperties`` and ``unevaluatedProperties`` all call ``re.search`` there."""
    import importlib

    for name in ("jsonschema._keywords", "jsonschema._utils", "jsonschema._legacy_keywords"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - a jsonschema that moved its keywords
            continue
        if getattr(module, "re", None) is re:
            module.re = _ReShim()  # type: ignore[attr-defined]


class re2_patterns:  # noqa: N801 - used as a context manager, like contextlib's lower-case ones
    """Within this block, on this thread, ``jsonschema`` matches schema patterns with RE2
    (``pattern_search``); other threads and code outside the block keep Python's ``re``."""

    def __enter__(self) -> None:
        _install_shim()
        self._was = getattr(_active, "on", False)
        _active.on = True

    def __exit__(self, *exc: object) -> None:
        _active.on = self._was
