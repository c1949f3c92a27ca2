"""FILE or ``-``: the one way expkit opens what a user points it at (a path, ``*.gz``, or standard input).

Every command that reads a user's file (``data stats``, ``why``, ``mem --oom`` ...) opens it here, so a
missing file, a directory and an unreadable file read the same everywhere.
"""

from __future__ import annotations

import gzip
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from expkit.errors import InputError

__all__ = [
    "MAX_DECOMPRESSED_BYTES",
    "MAX_LINE_BYTES",
    "MAX_TEXT_BYTES",
    "MAX_WHOLE_BYTES",
    "STDIN",
    "BoundedLines",
    "SourceText",
    "check_replaceable",
    "display_name",
    "not_utf8_hint",
    "open_binary",
    "read_source_text",
    "read_whole_bytes",
]

STDIN = "-"
"""The path that means standard input."""

# Bounds on inputs that never end (/dev/zero, a FIFO fed forever, a compression bomb): past one of these a
# read stops with an InputError (exit 2) instead of filling memory. Each is far beyond a real file of its kind.
MAX_LINE_BYTES = 256 * 2**20
"""One line of a line-oriented file (JSONL, CSV, a log): 256 MiB, ~1000x a long chat example."""
MAX_DECOMPRESSED_BYTES = 64 * 2**30
"""What a ``.gz`` file may inflate to: 64 GiB (a gzip bomb of zeros inflates ~1000x)."""
MAX_TEXT_BYTES = 512 * 2**20
"""A text read whole (a log for ``why``, a traceback): 512 MiB."""
MAX_WHOLE_BYTES = 2**30
"""A document parsed whole (a JSON list of eval outputs, a Chrome trace), after decompression: 1 GiB, which
``json.loads`` turns into ~10x that in Python objects."""


class BoundedLines:
    """A binary stream read line by line with the bounds above: a line past ``max_line_bytes`` or a stream
    past ``max_total_bytes`` raises InputError naming ``where``. Iterating yields lines as ``for line in f``
    does; ``read``, ``tell``, ``close`` and ``closed`` pass through (``read`` counted against the total)."""

    def __init__(self, raw: IO[bytes], where: str, *, max_line_bytes: int, max_total_bytes: int | None) -> None:
        self._raw, self._where = raw, where
        self._max_line, self._max_total = max_line_bytes, max_total_bytes
        self._total, self._lineno = 0, 0

    def _count(self, n: int) -> None:
        self._total += n
        if self._max_total is not None and self._total > self._max_total:
            raise InputError(
                f"more than {self._max_total / 2**30:.0f} GiB read without an end (a compression bomb, or a "
                "device like /dev/zero?)",
                path=self._where,
                hint="give a regular file of finite size",
            )

    def __iter__(self) -> BoundedLines:
        return self

    def _read_failed(self, exc: BaseException) -> InputError:
        # a .gz cut short (EOFError), corrupt inside (zlib.error) or not gzip at all (BadGzipFile, an OSError),
        # or a read the device refused: one line naming the file and where the read stopped
        what = "cut short" if isinstance(exc, EOFError) else f"unreadable ({exc})"
        return InputError(
            f"cannot read line {self._lineno + 1}: the data is {what}",
            path=self._where,
            line=self._lineno + 1,
            hint="check the file (gzip -t FILE for an archive) or give it again",
        )

    def __next__(self) -> bytes:
        try:
            line = self._raw.readline(self._max_line + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise self._read_failed(exc) from exc
        if not line:
            raise StopIteration
        self._lineno += 1
        self._count(len(line))
        if len(line) > self._max_line:
            raise InputError(
                f"line {self._lineno} is longer than {self._max_line / 2**20:.0f} MiB without a line end "
                "(not a line-oriented text file: binary data, or a device like /dev/zero?)",
                path=self._where,
                line=self._lineno,
                hint="give a JSONL/CSV/text file",
            )
        return line

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._raw.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            raise self._read_failed(exc) from exc
        self._count(len(data))
        return data

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        self._raw.close()

    @property
    def closed(self) -> bool:
        return self._raw.closed


def _needs_bounds(p: Path) -> bool:
    """A regular file of at most MAX_LINE_BYTES cannot hold a longer line: only other sources are wrapped."""
    try:
        st = p.stat()
    except OSError:
        return True
    import stat

    return not stat.S_ISREG(st.st_mode) or st.st_size > MAX_LINE_BYTES or p.suffix == ".gz"


def display_name(path: str | Path, stdin_name: str = "<stdin>") -> str:
    """How errors and reports name ``path``: ``stdin_name`` for ``-``, else the path as given."""
    return stdin_name if str(path) == STDIN else str(path)


@contextmanager
def open_binary(
    path: str | Path, *, kind: str = "JSONL file", hint: str = "give a .jsonl or .jsonl.gz file"
) -> Iterator[IO[bytes]]:
    """Open ``path`` for reading bytes: ``-`` is standard input, ``*.gz`` is gunzipped on the fly. A source
    that may not end (standard input, a device, a FIFO, a ``.gz``, a file larger than one line's bound) is
    read through :class:`BoundedLines`.

    Args:
        path: a file, or ``-``.
        kind: what the file should be, for the directory error (``is a directory, not a log file``).
        hint: what to give instead of a directory.

    Raises:
        InputError: a missing file, a directory, or a file that cannot be read; while reading, a line longer
            than MAX_LINE_BYTES or a ``.gz`` inflating past MAX_DECOMPRESSED_BYTES.
    """
    if str(path) == STDIN:
        yield cast(
            IO[bytes],
            BoundedLines(sys.stdin.buffer, "<stdin>", max_line_bytes=MAX_LINE_BYTES, max_total_bytes=None),
        )
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
    if _needs_bounds(p):
        total = MAX_DECOMPRESSED_BYTES if p.suffix == ".gz" else None
        f = cast(IO[bytes], BoundedLines(f, str(p), max_line_bytes=MAX_LINE_BYTES, max_total_bytes=total))
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
        InputError: see :func:`open_binary`; more than MAX_TEXT_BYTES of text.
    """
    if str(path) == STDIN and getattr(sys.stdin, "buffer", None) is None:  # a test's StringIO stdin
        return SourceText(sys.stdin.read(), "standard input")
    with open_binary(path, kind=kind, hint=hint) as f:
        data = f.read(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise InputError(
            f"more than {MAX_TEXT_BYTES / 2**20:.0f} MiB of text (a device like /dev/zero, or not a log?)",
            path=display_name(path, "standard input"),
            hint="give the part of the log that holds the error (tail -n 2000 LOG)",
        )
    return SourceText(data.decode("utf-8", errors="replace"), display_name(path, "standard input"))


def read_whole_bytes(path: str | Path, *, kind: str, hint: str) -> bytes:
    """The bytes of ``path`` (a ``.gz`` inflated) for a document parsed whole, at most MAX_WHOLE_BYTES: a
    gzip bomb or a device stops with one line instead of filling memory.

    Raises:
        InputError: see :func:`open_binary`; a cut or corrupt ``.gz``; more than MAX_WHOLE_BYTES.
    """
    with open_binary(path, kind=kind, hint=hint) as f:
        data = f.read(MAX_WHOLE_BYTES + 1)
    if len(data) > MAX_WHOLE_BYTES:
        raise InputError(
            f"more than {MAX_WHOLE_BYTES / 2**20:,.0f} MiB to parse whole (a compression bomb, or a device?)",
            path=display_name(path),
            hint=hint,
        )
    return data


def check_replaceable(path: str | Path) -> None:
    """Refuse an output ``path`` that a write through a temporary file and ``os.replace`` must not replace:
    an existing device, FIFO, socket or folder, or a symlink that leads nowhere (a loop). Run as root, the
    rename would put a regular file where ``/dev/null`` was (round five of issue 36's hostile suite:
    ``sft data --out /dev/null`` did); a FIFO or a link would be replaced silently.

    Raises:
        InputError: naming the path and what it is.
    """
    import os
    import stat

    try:
        os.lstat(path)
    except OSError:
        return  # a new file, or a path that cannot be looked at: the write itself names the problem
    try:
        mode = os.stat(path).st_mode
    except OSError:
        kind = "a symlink that leads nowhere (a loop, or a missing target)"
    else:
        if stat.S_ISREG(mode):
            return
        kind = "a folder" if stat.S_ISDIR(mode) else "a device, FIFO or socket"
    raise InputError(
        f"exists and is {kind}, not a regular file: nothing is written there",
        path=str(path),
        hint="give a new file name, or a regular file to replace",
    )


def not_utf8_hint(head: bytes) -> str:
    """What to do with a file whose first bytes ``head`` are not UTF-8 text: decompress a gzip or Zstandard
    file, convert UTF-16, and only for other bytes re-encode from Latin-1 (``iconv -f latin1``).

    Example:
        >>> not_utf8_hint(b"\\x1f\\x8b\\x08")
        'the file is gzip-compressed: rename it to *.gz (read directly), or gunzip it'
    """
    if head.startswith(b"\x1f\x8b"):
        return "the file is gzip-compressed: rename it to *.gz (read directly), or gunzip it"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "the file is Zstandard-compressed: zstd -d FILE first"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(head) >= 4 and head[1::2].count(0) > len(head) // 4):
        return "the file is UTF-16 text: iconv -f utf-16 -t utf-8 IN > OUT"
    return "re-encode the file as UTF-8, e.g. iconv -f latin1 -t utf-8 IN > OUT"
