"""What every command prints with ``--json``: one envelope, written here and nowhere else.

``emit_json(result)`` prints ``{"command": "stats ci", "version": ..., "result": ...}`` on stdout; the error
boundary in :mod:`expkit.cli.app` prints the ``error`` form. A script parses stdout and reads the exit code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["command_name", "emit_json", "set_command_name"]

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

    print(envelope(command_name(), result), flush=True)
    _current["emitted"] = True
