"""Stream JSON Lines (``.jsonl``, ``.jsonl.gz``, standard input) one record at a time, with errors that
say ``file:line:column``, and a tally that makes skipped lines visible (claim C1.1: peak memory stays flat)."""

from __future__ import annotations

import io
import operator
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from expkit.data.sources import display_name, not_utf8_hint, open_binary
from expkit.errors import InputError, UsageError

__all__ = [
    "JsonlSummary",
    "JsonlTally",
    "OnError",
    "dumps_record",
    "iter_jsonl",
    "iter_jsonl_objects",
    "loads_exact",
]

OnError = Literal["raise", "skip", "collect"]
_BOM = b"\xef\xbb\xbf"
_SNIPPET_CHARS = 60
_KEEP_LINE_NUMBERS = 20  # first skipped line numbers kept for the report
NOT_JSONL_AFTER_LINES = 1_000
"""When ``skip``/``collect`` have refused this many lines (checked again at each further multiple of it) and they
are 99 % of the lines so far, the reading stops: the input is not JSONL (binary data, or a device like
/dev/urandom that never ends, where a line now and then parses as a number), not a JSONL file with some bad
lines. At 10,000 a ``head -n 5`` on /dev/urandom could find its five "records" (lone digits, about one line in
6,000) first and exit 0, as a CI run did; by 1,000 lines that takes five in 1,000."""


@dataclass(frozen=True)
class JsonlSummary:
    """What a pass over a JSONL file saw.

    ``lines`` counts every physical line (during the loop: the line of the record just yielded), ``records``
    those parsed and yielded, ``blank`` empty or
    whitespace-only lines (ignored), ``skipped`` invalid lines left out (``skip``/``collect``), with the
    first ``first_skipped_lines`` line numbers.
    """

    path: str
    lines: int
    records: int
    blank: int
    skipped: int
    first_skipped_lines: tuple[int, ...]


@dataclass
class JsonlTally:
    """Filled in by ``iter_jsonl`` as it reads: counts, skipped line numbers, collected errors.

    Pass one in to see what ``skip`` left out; ``collect`` keeps every error (up to ``max_errors``,
    counted beyond). Call ``summary()`` after the loop.
    """

    path: str = ""
    lines: int = 0
    blank: int = 0
    skipped: int = 0
    first_skipped_lines: list[int] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    max_errors: int = 10_000
    not_json: int = 0  # of the skipped lines, those that are not JSON at all
    total_bytes: int | None = None  # size of a plain file on disk (None for gzip and stdin)
    _source: IO[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def records(self) -> int:
        return self.lines - self.blank - self.skipped

    def bytes_read(self) -> int | None:
        """How far into the file the reader is (bytes), for progress against ``total_bytes``; None for
        gzip and stdin, or once the file is closed."""
        if self._source is None or self.total_bytes is None or self._source.closed:
            return None
        try:
            return self._source.tell()
        except (OSError, ValueError):
            return None

    def skip_line(self, lineno: int, error: InputError | None = None) -> None:
        """Count line ``lineno`` as skipped (a record its reader refused), keeping ``error`` if given."""
        self.skipped += 1
        if len(self.first_skipped_lines) < _KEEP_LINE_NUMBERS:
            self.first_skipped_lines.append(lineno)
        if error is not None and len(self.errors) < self.max_errors:
            self.errors.append(error)

    def summary(self) -> JsonlSummary:
        return JsonlSummary(
            path=self.path,
            lines=self.lines,
            records=self.records,
            blank=self.blank,
            skipped=self.skipped,
            first_skipped_lines=tuple(self.first_skipped_lines),
        )


def _snippet(line: bytes, col: int) -> str:
    text = line.rstrip(b"\r\n").decode("utf-8", errors="replace")
    start = max(0, col - 1 - _SNIPPET_CHARS // 2)
    piece = text[start : start + _SNIPPET_CHARS]
    return ("..." if start else "") + piece + ("..." if start + _SNIPPET_CHARS < len(text) else "")


def _line_error(path: str, lineno: int, line: bytes, exc: orjson.JSONDecodeError) -> InputError:
    """An InputError for one bad line: file:line:column, what is wrong, and a short snippet."""
    body = line.rstrip(b"\r\n")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as uexc:
        col = uexc.start + 1  # byte offset; the same as the character column up to the first bad byte
        return InputError(
            f"invalid UTF-8 (byte 0x{body[uexc.start]:02x}) near {_snippet(line, col)!r}",
            path=path,
            line=lineno,
            column=col,
            hint=not_utf8_hint(body) if lineno == 1 else "re-encode the file as UTF-8 (iconv -f latin1 -t utf-8)",
        )
    col = exc.colno if exc.colno else exc.pos + 1
    if "end of data" in exc.msg:  # orjson reports column 1 for input that stops early; point at the end
        col = len(body.decode("utf-8")) + 1
    if not line.endswith(b"\n"):
        return InputError(
            f"the last line is cut: {exc.msg} near {_snippet(line, col)!r}",
            path=path,
            line=lineno,
            column=col,
            hint="the file was truncated (interrupted download or write?); drop the last line or re-create the file",
        )
    return InputError(
        f"invalid JSON: {exc.msg} near {_snippet(line, col)!r}",
        path=path,
        line=lineno,
        column=col,
        hint="fix the line, or leave bad lines out (on_error='skip'; on the command line --on-error skip)",
    )


_SKIP = object()
# orjson reads integers up to 2**64 - 1 exactly and larger ones as floats (1.1805916207174113e+21 for
# 2**70): a float this large in a parsed record may have been such an integer, so its line is re-read.
_BIG = float(2**63)


def _may_hold_big_int(obj: Any) -> bool:
    """Whether a parsed record holds a float of magnitude >= 2**63 (maybe an integer orjson could not keep
    exact), at any depth: walked with a stack, so a record nested as deep as orjson reads (1024) is no
    RecursionError (issue 36: a 900-deep record stopped ``data head``)."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if type(x) is float:
            if abs(x) >= _BIG:
                return True
        elif type(x) is dict:
            stack.extend(x.values())
        elif type(x) is list:
            stack.extend(x)
    return False


# Only text holding a run of 19 digits can be an integer outside [-2**63, 2**64) (2**63 has 19): other lines
# never need the walk above. The test maps every digit to b"0" and the rest to b" " (one C pass) and looks for
# 19 zeros; a 19-digit run in a string or a float's digits only costs a needless walk.
_DIGITS_TO_ZERO = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_NINETEEN_DIGITS = b"0" * 19


def _may_hold_big_int_text(text: bytes) -> bool:
    return _NINETEEN_DIGITS in text.translate(_DIGITS_TO_ZERO)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_exact(line: bytes | str) -> Any:
    """Parse one JSON value keeping integers of any size exact (the standard library's parser, which
    orjson outpaces but which turns 2**70 into an int, not a float). NaN/Infinity are refused as orjson
    refuses them.

    Example:
        >>> loads_exact(b'{"id": 1180591620717411303424}')["id"] == 2**70
        True
    """
    import json

    return json.loads(line, parse_constant=_refuse_constant)


def dumps_record(record: Any) -> str:
    """One record as compact JSON text (orjson's output), integers beyond 64 bits written exactly.

    Example:
        >>> dumps_record({"id": -2**70, "t": "é"})
        '{"id":-1180591620717411303424,"t":"é"}'
    """
    try:
        return orjson.dumps(record).decode()
    except orjson.JSONEncodeError as exc:
        # orjson writes neither integers past 64 bits nor records nested deeper than 254 levels
        if "64-bit" not in str(exc) and "Recursion limit" not in str(exc):
            raise
        import json

        try:
            return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:
            raise InputError(f"a record nested too deep to write back as JSON ({exc})") from None


def _retry_or_note(
    t: JsonlTally,
    name: str,
    lineno: int,
    line: bytes,
    exc: orjson.JSONDecodeError,
    on_error: OnError,
    nan_ok: bool = False,
) -> Any:
    """The slow path, off the per-line loop: a UTF-8 BOM on line 1 is stripped and the line parsed
    again; with ``nan_ok`` the standard library's parser reads ``NaN``/``Infinity`` (as Python's json writes
    them); anything else is noted (or raised) and ``_SKIP`` returned."""
    if lineno == 1 and line.startswith(_BOM):
        line = line[len(_BOM) :]
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError as exc2:
            exc = exc2
    if nan_ok and line.strip():
        import json

        try:
            return json.loads(line)
        except (ValueError, UnicodeDecodeError):
            pass
    _note_bad_line(t, name, lineno, line, exc, on_error)
    return _SKIP


def _note_bad_line(
    t: JsonlTally, name: str, lineno: int, line: bytes, exc: orjson.JSONDecodeError, on_error: OnError
) -> None:
    """A line orjson refused: blank (counted), or invalid (raised, or counted and kept per on_error)."""
    if not line.strip():
        t.blank += 1
        return
    err = _line_error(name, lineno, line, exc)
    if on_error == "raise":
        raise err from None
    t.skip_line(lineno, err if on_error == "collect" else None)
    t.not_json += 1
    if t.not_json % NOT_JSONL_AFTER_LINES == 0 and t.not_json * 100 >= 99 * (lineno - t.blank):
        raise InputError(
            f"not a JSONL file: {t.not_json:,} of its first {lineno - t.blank:,} non-blank lines are not JSON "
            "(binary data, or a device like /dev/urandom?)",
            path=name,
            line=lineno,
            hint="give a JSONL file (one JSON object per line)",
        )


def _duplicate_key_error(name: str, lineno: int, line: bytes) -> InputError | None:
    """The error for a record that gives one key twice at its top level, None otherwise. Both orjson and json
    keep the last of two equal keys silently (``{"score": 1, "score": 0}`` reads as 0). Called only for a line
    whose count of ``":`` differs from its record's key count (a flat record without duplicates never gets
    here); such a line is parsed again with the standard library's ``object_pairs_hook``."""
    import json

    top_twice: list[str] = []  # the hook runs innermost object first: the last call is the record itself

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        top_twice[:] = [k for k, _ in items if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
        return dict(items)

    try:
        json.loads(line.removeprefix(_BOM), object_pairs_hook=pairs)
    except (ValueError, RecursionError):  # orjson read it; a line json cannot read holds no duplicate we can name
        return None
    if not top_twice:
        return None
    return InputError(
        f"key {top_twice[0]!r} appears twice in one record (a JSON reader keeps the last one silently)",
        path=name,
        line=lineno,
        hint=f"keep one {top_twice[0]!r} per line",
    )


def _keep_distinct(t: JsonlTally, name: str, lineno: int, line: bytes, on_error: OnError) -> bool:
    """Whether to keep the record of ``line``: False when it gives a key twice and is skipped (``skip``,
    ``collect``); raises for ``raise``. The loop's cheap test (one ``bytes.count`` per line) sends here only
    lines whose ``":`` count differs from the record's key count: duplicates, nested objects, ``":`` inside a
    string, ``"k" :`` spacing."""
    err = _duplicate_key_error(name, lineno, line)
    if err is None:
        return True
    if on_error == "raise":
        raise err
    t.skip_line(lineno, err if on_error == "collect" else None)
    return False


# A key written with space before its colon is not counted by the cheap test (b'":'), and a nested object adds
# to the count: the two can cancel and hide a duplicate, so such lines always take the exact parse.
_SPACED_COLON = b'" :'
_TAB_COLON = b'"\t:'


@dataclass(frozen=True)
class _Checks:
    """What ``iter_jsonl`` was asked to check, for its loops."""

    name: str
    on_error: OnError
    nan_ok: bool
    exact_ints: bool
    distinct_keys: bool
    track: bool  # keep tally.lines on the line of the record being consumed (a caller passed a tally)


def _rewind_to_refused_line(f: io.BufferedReader) -> int:
    """After orjson refused the line just read from ``f``, seek ``f`` back to that line's start and return how
    many lines come before it: the fast loop in ``iter_jsonl`` counts no lines, so they are counted here, once
    (newlines before the line, read with ``os.pread`` in 1 MiB blocks, C speed)."""
    end = f.tell() - 1  # the refused line's own last byte (its newline) is not one before it
    fd, offset, lines_before, start = f.fileno(), 0, 0, 0
    while offset < end:
        block = os.pread(fd, min(1 << 20, end - offset), offset)
        if not block:
            break
        lines_before += block.count(b"\n")
        last = block.rfind(b"\n")
        if last >= 0:
            start = offset + last + 1
        offset += len(block)
    f.seek(start)
    return lines_before


_CHUNK_BYTES = 1 << 16  # whole lines read at once when a check needs a look ahead: 64 KiB


def _plain_chunk(lines: list[bytes], text: bytes) -> list[Any] | None:
    """The records of a chunk of lines for ``distinct_keys`` when no line can give a key twice, else None (then
    each line is tested on its own). Every line parses to a dict, none writes ``"k" :``, and the chunk's ``":``
    count equals its records' key count: that count minus the keys is >= 0 on each line (nested keys, ``":`` in
    a string and a key given twice add to it), so equal totals mean no line the per-line test would flag."""
    if _SPACED_COLON in text or _TAB_COLON in text:
        return None
    try:
        records = list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        return None
    if set(map(type, records)) != {dict} or text.count(b'":') != sum(map(len, records)):
        return None
    return records


def _iter_chunked(f: IO[bytes], t: JsonlTally, c: _Checks) -> Iterator[Any]:
    """Records of a regular file for a reader asked for ``exact_ints`` or ``distinct_keys``: ``_CHUNK_BYTES`` of
    lines at a time, the cheap tests run once over the chunk (one C pass each), and only a chunk they flag read
    line by line with the per-line tests (``_iter_lines``). So a file without a 19-digit run never walks a
    record, and a file of flat records without duplicate keys never pays a count per line (issue 36)."""
    base = 0  # lines before this chunk
    for lines in iter(lambda: f.readlines(_CHUNK_BYTES), []):
        text = b"".join(lines)
        exact = c.exact_ints and _may_hold_big_int_text(text)
        records = _plain_chunk(lines, text) if c.distinct_keys and not exact else None
        if records is None and not (exact or c.distinct_keys):  # nothing to check: parse line by line here
            it = iter(lines)
            try:
                for lineno, line in enumerate(it, base + 1):
                    t.lines = lineno
                    yield orjson.loads(line)
            except orjson.JSONDecodeError:  # numbered, retried or reported by _iter_lines from that line on
                bad = len(lines) - operator.length_hint(it) - 1
                yield from _iter_lines(lines[bad:], base + bad, t, c, exact=False, distinct=False)
        elif records is None:
            yield from _iter_lines(lines, base, t, c, exact=exact, distinct=c.distinct_keys)
        elif c.track:
            for lineno, record in enumerate(records, base + 1):
                t.lines = lineno  # while a record is consumed, the tally names its line
                yield record
        else:
            yield from records
        base += len(lines)
        t.lines = base


def _iter_lines(
    lines: Iterable[bytes], base: int, t: JsonlTally, c: _Checks, *, exact: bool, distinct: bool
) -> Iterator[Any]:
    """Records of ``lines`` (numbered from ``base + 1``) one at a time, each check on its own line: errors with
    file:line, the BOM, ``nan_ok``, and the cheap per-line tests before the slow checks: ``exact`` (the
    ``exact_ints`` walk, only for a line with a 19-digit run) and ``distinct_keys`` (the exact parse, only for a
    line whose ``":`` count differs from its record's key count)."""
    loads = orjson.loads
    lineno = base
    try:
        for lineno, line in enumerate(lines, base + 1):
            if c.track:
                t.lines = lineno  # while a record is consumed, the tally names its line
            try:
                record = loads(line)
            except orjson.JSONDecodeError as exc:
                record = _retry_or_note(t, c.name, lineno, line, exc, c.on_error, c.nan_ok)
                if record is _SKIP:
                    continue
            if exact and _may_hold_big_int_text(line) and _may_hold_big_int(record):
                record = _loads_exact_line(c.name, lineno, line.removeprefix(_BOM) if lineno == 1 else line)
            if (
                distinct  # the cheap test first; the slow parse only for the lines it flags
                and type(record) is dict
                and (line.count(b'":') != len(record) or _SPACED_COLON in line or _TAB_COLON in line)
                and not _keep_distinct(t, c.name, lineno, line, c.on_error)
            ):
                continue
            yield record
    finally:
        t.lines = lineno


def _loads_exact_line(name: str, lineno: int, line: bytes) -> Any:
    """``loads_exact`` on one line; a line nested too deep for the standard library's parser is an InputError
    at file:line (orjson read it, up to its own 1024 levels)."""
    try:
        return loads_exact(line)
    except RecursionError:
        raise InputError(
            "a record nested too deep to keep its large integers exact",
            path=name,
            line=lineno,
            hint="flatten the record, or read it without exact integers",
        ) from None


def iter_jsonl(
    path: str | Path,
    *,
    on_error: OnError = "raise",
    tally: JsonlTally | None = None,
    exact_ints: bool = False,
    nan_ok: bool = False,
    distinct_keys: bool = False,
) -> Iterator[Any]:
    """Yield one parsed record per line of a JSONL file, holding one line in memory at a time.

    Args:
        path: a ``.jsonl`` file, a ``.jsonl.gz`` file, or ``-`` for standard input.
        on_error: ``raise`` (default) stops at the first invalid line; ``skip`` leaves invalid lines out
            and reports them (count and first line numbers) in ``tally``, or as a warning at the end when
            no tally is given; ``collect`` is ``skip`` that also keeps each error in ``tally.errors``.
        tally: filled in while reading (lines, blank, skipped, errors). Needed for ``collect``.
        exact_ints: keep integers beyond 64 bits exact (orjson reads them as floats): a record holding
            a float of magnitude >= 2**63 is parsed again by ``loads_exact``. Costs one pass over
            each 64 KiB of text, and a walk of the records only where a run of 19 digits occurs.
        nan_ok: read the ``NaN``, ``Infinity`` and ``-Infinity`` that Python's ``json.dumps`` writes (as
            floats) instead of refusing the line; for logs written by Python tools (lm-eval's samples).
        distinct_keys: refuse a record that gives one key twice (``{"score": 1, "score": 0}``; JSON readers
            keep the last silently): an error naming the key, raised or skipped per ``on_error``. Flat records
            cost one count per 64 KiB of lines; a record with nested objects a count per line.

    A UTF-8 BOM, CRLF line ends and blank lines are accepted. A cut last line (no newline, incomplete
    JSON) is an error with its line number.

    Raises:
        InputError: a bad line (``file:line:column: invalid JSON ... near '...'``), a missing file, a
            directory, (``distinct_keys``) a key twice in one record.
        UsageError: an unknown ``on_error``, or ``collect`` without a tally.

    Example:
        >>> for rec in iter_jsonl("train.jsonl"):   # doctest: +SKIP
        ...     n_chars += len(rec["text"])
    """
    if on_error not in ("raise", "skip", "collect"):
        raise UsageError(f"on_error={on_error!r} is not one of raise, skip, collect")
    if on_error == "collect" and tally is None:
        raise UsageError("on_error='collect' needs a tally to collect into", hint="pass tally=JsonlTally()")
    name = display_name(path)
    t = tally if tally is not None else JsonlTally()
    t.path = name
    checks = _Checks(name, on_error, nan_ok, exact_ints, distinct_keys, track=tally is not None)
    loads = orjson.loads
    with open_binary(path) as f:
        t._source = f
        plain = str(path) != "-" and not str(path).endswith(".gz")
        t.total_bytes = Path(path).stat().st_size if plain else None
        try:
            base = 0
            if type(f) is io.BufferedReader and not (tally is not None or exact_ints or distinct_keys):
                # the fast path (issue 36: the parse floor's loop, one yield more): a regular file, no check
                # asked for; a line orjson refuses (blank, BOM, bad JSON, NaN) ends it, and that line and the
                # rest go through _iter_lines, which numbers, retries or reports them
                try:
                    for line in f:
                        yield loads(line)
                except orjson.JSONDecodeError:
                    base = _rewind_to_refused_line(f)
                else:
                    return
            if type(f) is io.BufferedReader and (exact_ints or distinct_keys):
                yield from _iter_chunked(f, t, checks)
            else:
                yield from _iter_lines(f, base, t, checks, exact=exact_ints, distinct=distinct_keys)
        except (OSError, EOFError) as exc:  # gzip: a corrupt or cut archive
            raise InputError(f"cannot read after line {t.lines}: {exc}", path=name, line=t.lines + 1) from exc
    if t.skipped and tally is None:
        warnings.warn(
            f"{name}: skipped {t.skipped} invalid line(s), first at line(s) "
            f"{', '.join(map(str, t.first_skipped_lines[:10]))}",
            stacklevel=2,
        )


def iter_jsonl_objects(
    path: str | Path,
    *,
    on_error: OnError = "raise",
    tally: JsonlTally | None = None,
    exact_ints: bool = False,
    nan_ok: bool = False,
    distinct_keys: bool = False,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, record)`` for a JSONL file whose every line must be a JSON object.

    The one reader for files of rows (eval results, metric logs, chat examples): ``iter_jsonl`` (the same
    file:line:column errors, ``.gz`` and ``-``, ``on_error`` and ``tally``) plus the line number of each
    record. A caller that validates records further (a chat example) reports its own errors at that line
    and, with ``on_error="skip"``, can count them with :meth:`JsonlTally.skip_line`.

    Raises:
        InputError: what ``iter_jsonl`` raises, and (``on_error="raise"``) a line holding a JSON value that
            is not an object; otherwise such a line is skipped and counted like invalid JSON.

    Example:
        >>> for line, row in iter_jsonl_objects("results.jsonl"):   # doctest: +SKIP
        ...     score = float(row["score"])
    """
    t = tally if tally is not None else JsonlTally()
    records = iter_jsonl(
        path, on_error=on_error, tally=t, exact_ints=exact_ints, nan_ok=nan_ok, distinct_keys=distinct_keys
    )
    for record in records:
        if not isinstance(record, dict):
            err = InputError(
                f"a JSON {type(record).__name__}, not an object",
                path=display_name(path),
                line=t.lines,
                hint="one JSON object per line",
            )
            if on_error == "raise":
                raise err
            t.skip_line(t.lines, err if on_error == "collect" else None)
            continue
        yield t.lines, record
