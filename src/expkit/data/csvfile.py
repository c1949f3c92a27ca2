"""Read a CSV (or TSV) file of rows as ``(line number, row dict)``: UTF-8 with or without a byte-order
mark (Excel writes one), and a non-UTF-8 byte named by its line and column instead of a traceback."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from expkit.errors import InputError

__all__ = ["iter_csv_rows", "iter_text_lines"]

_BOM = b"\xef\xbb\xbf"


def iter_text_lines(path: str | Path) -> Iterator[str]:
    """The lines of a UTF-8 text file, decoded one at a time (line ends kept), a leading BOM dropped.

    Raises:
        InputError: a missing file or directory; a line past ``MAX_LINE_BYTES`` (data.sources); a line that
            is not UTF-8, with its line and column
            and the byte found (``iconv -f latin1 -t utf-8`` is the usual fix).
    """
    from expkit.data.sources import not_utf8_hint, open_binary

    p = Path(path)
    with open_binary(p, kind="file", hint="give a CSV or text file") as fh:  # bounded lines for /dev/zero, FIFOs
        for lineno, raw in enumerate(fh, 1):
            if lineno == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"is not UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1} cannot be decoded",
                    path=p,
                    line=lineno,
                    column=exc.start + 1,
                    hint=not_utf8_hint(raw)
                    if lineno == 1
                    else "re-encode the file as UTF-8, e.g. iconv -f latin1 -t utf-8 IN > OUT",
                ) from None


_LISTED_COLUMNS = 20  # column names an error shows: a header of 100,000 columns stays one readable line


def _listed(fields: Sequence[str]) -> str:
    """The first column names, and how many more: ``a, b, c ... (+99,997 more)``."""
    shown = ", ".join(fields[:_LISTED_COLUMNS])
    return shown if len(fields) <= _LISTED_COLUMNS else f"{shown} ... (+{len(fields) - _LISTED_COLUMNS:,} more)"


def iter_csv_rows(
    path: str | Path, *, required: Sequence[str] = (), hint: str | None = None
) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line number, row)`` for each data row of a CSV file (``.tsv``: tab-separated); the line number
    is the row's last physical line, as ``csv.DictReader.line_num`` counts it.

    Args:
        path: the file.
        required: columns the header must have.
        hint: what to tell the user when a required column is missing.

    Raises:
        InputError: what ``iter_text_lines`` raises; a header without a required column or naming one
            column twice; a row with
            more fields than the header has columns.

    Example:
        >>> for line, row in iter_csv_rows("results.csv", required=("model", "item", "score")):  # doctest: +SKIP
        ...     print(line, row["model"])
    """
    p = Path(path)
    delimiter = "\t" if p.suffix.lower() == ".tsv" else ","
    reader = csv.DictReader(iter_text_lines(p), delimiter=delimiter)
    try:
        fields = reader.fieldnames
        if fields is None:
            return
        counts = Counter(fields)  # one pass: fields.count per field was quadratic (100,000 columns: minutes)
        twice = sorted(f for f, n in counts.items() if n > 1)
        if twice:  # csv.DictReader keeps the last of two same-named columns without a word
            raise InputError(
                f"the header names column {twice[0]!r} twice (columns: {_listed(fields)})",
                path=p,
                line=1,
                hint="rename or drop one of them",
            )
        missing = [f for f in required if f not in fields]
        if missing:
            raise InputError(
                f"the header has no column {missing[0]!r} (columns: {_listed(fields)})", path=p, line=1, hint=hint
            )
        for row in reader:
            if None in row:
                raise InputError(
                    f"the row has {len(fields) + len(row[None])} fields for {len(fields)} columns",
                    path=p,
                    line=reader.line_num,
                    hint="quote fields that contain the separator",
                )
            yield reader.line_num, row
    except csv.Error as exc:
        raise InputError(f"not a valid CSV row: {exc}", path=p, line=reader.line_num) from None
