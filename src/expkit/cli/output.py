"""What every command prints: one way out, written here and nowhere else.

A command makes one library call and ends in ``emit(result, as_json, human=render_x)``: with ``--json`` it
prints ``{"command": "stats ci", "version": ..., "result": ...}`` on stdout; otherwise it calls the renderer
from :mod:`expkit.render`, which is typed against the result so that mypy sees a misspelled field. The error
boundary in :mod:`expkit.cli.app` prints the ``error`` form. A script parses stdout and reads the exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["command_name", "emit", "emit_json", "print_json", "set_command_name"]

T = TypeVar("T")

_current: dict[str, Any] = {"command": "", "emitted": False}


def set_command_name(name: str) -> None:
    """Called by the error boundary once it has parsed which command runs (``stats ci``)."""
    _current["command"] = name
    _current["emitted"] = False


def result_emitted() -> bool:
    """Whether this command already printed its envelope (a failed check after its result adds none)."""
    return bool(_current["emitted"])


def command_name() -> str:
    """``stats ci`` for ``expkit stats ci ...``: the command path without the program name."""
    return _current["command"]


def emit_json(result: Any) -> None:
    """Print ``result`` (a dataclass, or any nesting of them) in the ``--json`` envelope."""
    from expkit.render.jsonout import envelope

    print_json(envelope(command_name(), result))
    _current["emitted"] = True


def print_json(text: str) -> None:
    """Write JSON text (from :mod:`expkit.render.jsonout`) to stdout as it is: past the terminal sanitizer,
    whose ``\\x7f`` would be an invalid JSON escape (issue 35), since JSON escaping already keeps a terminal
    safe; escaped to ASCII where stdout cannot encode UTF-8."""
    from expkit.render.jsonout import ascii_json

    stream = getattr(sys.stdout, "unsanitized", sys.stdout)
    encoding = str(getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
    if encoding not in ("utf-8", "utf8"):
        text = ascii_json(text)
    print(text, file=stream, flush=True)


def emit(result: T, as_json: bool, *, human: Callable[[T], None]) -> None:
    """The one way out of a command: the ``--json`` envelope of ``result``, or ``human(result)``.

    Args:
        result: what the library returned (a frozen dataclass, or a nesting of them).
        as_json: the command's ``--json`` flag.
        human: the renderer in :mod:`expkit.render` typed against ``result``'s class.
    """
    if as_json:
        emit_json(result)
    else:
        human(result)
