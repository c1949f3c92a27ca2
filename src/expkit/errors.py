"""The exceptions expkit raises on purpose.

Every one of them is an ``ExpkitError``; the CLI prints such an error as one line (what went wrong,
where, what to do) with no traceback. Anything that is *not* an ``ExpkitError`` is a bug in expkit
and is shown with its full traceback.

::

    ExpkitError                 exit 2 unless stated
    ├── UsageError              a bad argument value or combination
    ├── InputError              bad user data: a file, a line, a field (carries file:line)
    ├── MissingDependency       an optional package or tool is not installed
    ├── CheckFailed             a check ran and failed (exit 1): over tolerance, a model that does not stop
    └── LabError                a lab could not run (shown as failed in the report)
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "CheckFailed",
    "ExpkitError",
    "InputError",
    "LabError",
    "MissingDependency",
    "UsageError",
]


class ExpkitError(Exception):
    """Base of every error expkit raises on purpose.

    Args:
        message: what is wrong, naming the bad value.
        hint: what the user should do about it.
    """

    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(ExpkitError):
    """A bad argument value or combination, e.g. ``--correct 81 --n 80``."""


class InputError(ExpkitError):
    """Bad user data. ``path`` and ``line`` (1-based) say where, when known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.column = column
        where = ":".join(str(p) for p in (self.path, line, column) if p is not None)
        super().__init__(f"{where}: {message}" if where else message, hint=hint)


class MissingDependency(ExpkitError):
    """An optional package or external tool is needed and absent."""


class CheckFailed(ExpkitError):
    """A check ran and its result is a failure. The CLI exits 1, not 2."""

    exit_code = 1


class LabError(ExpkitError):
    """A lab could not run; the report shows it as failed and the other labs still run."""
