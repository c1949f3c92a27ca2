"""The console: rich on a terminal, plain text in pipes; progress that stays quiet when piped.

Width, decided here once for every command: ``COLUMNS`` when it is set (a user's or a test's choice, 80
included), else the terminal's own width; tables shrink their columns to fit it and text wraps at word
boundaries. In a pipe or a file without ``COLUMNS`` nothing is squeezed or wrapped: lines may be as long as
``PIPE_WIDTH`` for tables and unlimited for text, so ``grep`` sees whole lines.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Column, Table

from expkit.diagnose.logtext import sanitize_for_terminal

__all__ = [
    "MAX_COLUMNS",
    "PIPE_WIDTH",
    "byte_progress",
    "console_width",
    "err_console",
    "fitted_table",
    "help_width",
    "note_pipe_closed",
    "out_console",
    "pipe_closed",
    "progress_steps",
]

PIPE_WIDTH = 200
"""Table width in a pipe or file without ``COLUMNS``: wide enough that no column of ours is cut."""
MAX_COLUMNS = 1000
"""The widest ``COLUMNS`` honoured: rich lays out every line at the width it is given, and
``COLUMNS=99999999 expkit --help`` ran for minutes (round five of issue 36's hostile suite)."""


def console_width(stream: TextIO) -> int | None:
    """The width to render for ``stream``: ``COLUMNS`` when set to a positive integer, ``None`` on a terminal
    (rich asks the terminal), ``PIPE_WIDTH`` otherwise."""
    columns = _columns_env()
    if columns is not None:
        return columns
    isatty = getattr(stream, "isatty", None)
    return None if isatty is not None and isatty() else PIPE_WIDTH


def _columns_env() -> int | None:
    columns = os.environ.get("COLUMNS", "").strip()
    return min(int(columns), MAX_COLUMNS) if columns.isdigit() and int(columns) > 0 else None


def help_width() -> int | None:
    """The width for click's and typer's help (their console reads ``COLUMNS`` itself): ``MAX_COLUMNS`` when
    ``COLUMNS`` asks for more, else None (theirs to decide)."""
    columns = os.environ.get("COLUMNS", "").strip()
    return MAX_COLUMNS if columns.isdigit() and int(columns) > MAX_COLUMNS else None


EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a writer whose reader went away (``| head -1``), as git does."""


_PIPE = {"closed": False}


def pipe_closed() -> bool:
    """Whether a write to stdout or stderr found its reader gone (``| head -1``) during this command: the
    error boundary then exits 141 whatever code the writer chose (click exits 1 on EPIPE, rich 1 too)."""
    return _PIPE["closed"]


def note_pipe_closed(closed: bool = True) -> None:
    """Record that the reader of stdout (or stderr) went away, for :func:`pipe_closed` (``False``: a new
    command starts)."""
    _PIPE["closed"] = closed


class _PipeAwareConsole(Console):
    """rich exits with 1 when the reader of stdout goes away; a closed pipe is not a failure: 141, like every
    other expkit command and like coreutils (issue 21: ``expkit ... | head -1`` exited 1 for every table)."""

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Any:
        text = _surrogates_shown(sanitize_for_terminal(text))
        if not self.encoding.startswith("utf"):  # PYTHONIOENCODING=ascii: an "é" in a cell was a UnicodeEncodeError
            text = text.encode(self.encoding, "backslashreplace").decode(self.encoding)
        return super().render_str(text, *args, **kwargs)

    def on_broken_pipe(self) -> None:
        note_pipe_closed()
        self.quiet = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout without a file descriptor (a test's capture)
            pass
        raise SystemExit(EXIT_BROKEN_PIPE)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogates_shown(text: str) -> str:
    """Lone surrogates (bytes of a file name that are not UTF-8, as Python's surrogateescape reads them;
    they cannot be encoded) shown as the byte, ``\\xff``, or as ``\\ud800``."""
    if not _SURROGATE.search(text):
        return text

    def shown(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"

    return _SURROGATE.sub(shown, text)


class TerminalSafeStream(io.TextIOBase):
    """stdout or stderr for the length of one command: every string written through ``print`` has terminal
    escape sequences removed and other control characters shown as ``\\xNN`` (newlines and tabs kept), so a
    key, a model name, a chat turn or a path read from outside cannot retitle, recolour or rewrite the user's
    terminal (issue 21: 12 places echoed them). rich consoles write to ``unsanitized`` (their own colours are
    escapes) and sanitize the strings they are given instead (``_PipeAwareConsole.render_str``). JSON output
    is written past it (``cli.output.print_json``): JSON escaping alone keeps it safe and strict."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.unsanitized = stream

    def write(self, text: str) -> int:
        safe = _surrogates_shown(sanitize_for_terminal(text))
        try:
            try:
                self.unsanitized.write(safe)
            except UnicodeEncodeError:  # PYTHONIOENCODING=ascii, a latin-1 terminal: show what cannot be encoded
                encoding = getattr(self.unsanitized, "encoding", None) or "ascii"
                self.unsanitized.write(safe.encode(encoding, "backslashreplace").decode(encoding))
        except BrokenPipeError:
            note_pipe_closed()
            raise
        return len(text)

    def flush(self) -> None:
        try:
            self.unsanitized.flush()
        except BrokenPipeError:
            note_pipe_closed()
            raise

    def isatty(self) -> bool:
        return self.unsanitized.isatty()

    def fileno(self) -> int:
        return self.unsanitized.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # io.TextIOBase types it as a plain attribute
        return getattr(self.unsanitized, "encoding", "utf-8")

    @property
    def buffer(self) -> Any:
        return getattr(self.unsanitized, "buffer", None)


@contextmanager
def terminal_safe_streams() -> Iterator[None]:
    """Sanitize what a command prints on stdout and stderr until the block ends (the CLI's error boundary)."""
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafeStream(old_out), TerminalSafeStream(old_err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = old_out, old_err


def _console(stream: TextIO) -> Console:
    stream = getattr(stream, "unsanitized", stream)
    width = console_width(stream)
    piped = width == PIPE_WIDTH and _columns_env() is None
    # A known width (terminal or COLUMNS): wrap text at word boundaries inside it. A pipe: never wrap text.
    return _PipeAwareConsole(file=stream, highlight=False, width=width, soft_wrap=piped)


def out_console() -> Console:
    """A console on stdout that fits its width (see the module docstring)."""
    return _console(sys.stdout)


def err_console() -> Console:
    """A console on stderr that fits its width (see the module docstring)."""
    return _console(sys.stderr)


def fitted_table(*headers: str | Column, title: str | None = None, no_wrap: tuple[str, ...] = ()) -> Table:
    """A table that gives its space to the data: a rule under the header and no outer box (saves two columns
    per cell against rich's default), and cells that are too wide *fold* onto the next line instead of being
    cut with an ellipsis, so no digit is lost at 80 columns. ``no_wrap`` names headers whose cells stay on one
    line (IDs); a ``Column`` passes through as given.
    """
    columns = [h if isinstance(h, Column) else Column(h, overflow="fold", no_wrap=h in no_wrap) for h in headers]
    return Table(*columns, title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)


@contextmanager
def progress_steps(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """Yield ``advance(label)``. On a terminal: a rich progress bar on stderr. In a pipe: one plain
    line per step (``[2/7] C2.2 ...``) on stderr, so logs still show where a long job is.
    """
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console(),
            transient=False,
        ) as bar:
            task = bar.add_task(description, total=total)
            started = [False]

            def advance(label: str) -> None:
                if started[0]:
                    bar.advance(task)
                started[0] = True
                bar.update(task, description=f"{description}: {label}")

            yield advance
            bar.update(task, completed=total, description=f"{description}: done")
    else:
        count = [0]

        def advance(label: str) -> None:
            count[0] += 1
            print(f"[{count[0]}/{total}] {description}: {label}", file=sys.stderr, flush=True)

        yield advance


BYTE_PROGRESS_MIN_BYTES = 64 * 2**20
"""Files smaller than this are read in a few seconds: no progress shown."""


@contextmanager
def byte_progress(path: str | Path, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """Yield ``on_progress(done_bytes, total_bytes)`` showing tenths (a bar on a terminal, ten plain lines in
    a pipe) for a large plain file; ``None`` for stdin, gzip and small files (nothing to show)."""
    p = Path(path)
    if str(path) == "-" or p.suffix == ".gz" or not p.is_file() or p.stat().st_size < BYTE_PROGRESS_MIN_BYTES:
        yield None
        return
    with progress_steps(10, label) as advance:
        shown = [0]

        def on_progress(done: int, total: int) -> None:
            tenth = min(9, 10 * done // total)
            while shown[0] < tenth:
                shown[0] += 1
                advance(f"{10 * shown[0]}%")

        yield on_progress
