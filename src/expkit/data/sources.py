"""FILE or ``-``: the one way expkit opens what a user points it at (a path, ``*.gz``, or standard input).

Every command that reads a user's file (``data stats``, ``why``, ``mem --oom`` ...) opens it here, so a
missing file, a directory and an unreadable file read the same everywhere.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from expkit.errors import InputError

__all__ = ["STDIN", "SourceText", "display_name", "open_binary", "read_source_text"]

STDIN = "-"
"""The path that means standard input."""


def display_name(path: str | Path, stdin_name: str = "<stdin>") -> str:
    """How errors and reports name ``path``: ``stdin_name`` for ``-``, else the path as given."""
    return stdin_name if str(path) == STDIN else str(path)


@contextmanager
def open_binary(
    path: str | Path, *, kind: str = "JSONL file", hint: str = "give a .jsonl or .jsonl.gz file"
) -> Iterator[IO[bytes]]:
    """Open ``path`` for reading bytes: ``-`` is standard input, ``*.gz`` is gunzipped on the fly.

    Args:
        path: a file, or ``-``.
        kind: what the file should be, for the directory error (``is a directory, not a log file``).
        hint: what to give instead of a directory.

    Raises:
        InputError: a missing file, a directory, or a file that cannot be read.
    """
    if str(path) == STDIN:
        yield sys.stdin.buffer
        return
    p = Path(path)
    if p.is_dir():
        raise InputError(f"is a directory, not a {kind}", path=p, hint=hint)
    if not p.exists():
        raise InputError("no such file", path=p, hint="check the path (or use '-' to read standard input)")
    try:
        f = cast(IO[bytes], gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb"))  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=p) from exc
    try:
        yield f
    finally:
        f.close()


@dataclass(frozen=True)
class SourceText:
    """A whole text read from a file or standard input; ``where`` names it for messages."""

    text: str
    where: str


def read_source_text(path: str | Path, *, kind: str = "text file", hint: str = "give the file") -> SourceText:
    """The text of ``path`` (``-``: standard input), decoded as UTF-8 with bad bytes replaced, so a log that
    is not UTF-8 cannot stop the read.

    Raises:
        InputError: see :func:`open_binary`.
    """
    if str(path) == STDIN and getattr(sys.stdin, "buffer", None) is None:  # a test's StringIO stdin
        return SourceText(sys.stdin.read(), "standard input")
    with open_binary(path, kind=kind, hint=hint) as f:
        data = f.read()
    return SourceText(data.decode("utf-8", errors="replace"), display_name(path, "standard input"))
