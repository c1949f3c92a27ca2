"""``expkit data`` on the console: the profile's tables, the violations, records as JSONL."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from expkit.render.console import fitted_table, out_console

if TYPE_CHECKING:
    from expkit.data.profile import DatasetProfile
    from expkit.data.sampling import RecordSample
    from expkit.data.schema import ValidationReport

__all__ = ["render_profile", "render_records", "render_validation"]


def _fmt_int(x: float) -> str:
    return f"{x:,.0f}"


def render_profile(prof: DatasetProfile) -> None:
    """The read summary, one row per key with its JSON types, and the length percentiles of the field."""
    r = prof.read
    con = out_console()
    con.print(
        f"{r.path}: {r.records:,} records in {r.lines:,} lines ({r.blank:,} blank, {r.skipped:,} skipped"
        + (f", first at lines {', '.join(map(str, r.first_skipped_lines[:10]))}" if r.skipped else "")
        + ")"
        + (f"; {prof.non_object_records:,} records are not JSON objects" if prof.non_object_records else "")
    )
    keys = fitted_table("key", "records", "types")
    for k in prof.keys:
        keys.add_row(k.name, f"{k.count:,}", ", ".join(f"{t} ({c:,})" for t, c in k.types.items()))
    con.print(keys)
    if prof.keys_not_listed:
        con.print(
            f"and {prof.keys_not_listed:,} more keys ({prof.key_count:,} distinct in all; the most frequent are "
            "listed: --keys N for more, --keys 0 for all)"
        )
    if prof.field is None:
        con.print("no text field found (use --field)")
        return
    lengths = fitted_table(f"length of {prof.field!r}", "records", "mean", "min", "p50", "p90", "p99", "max")
    for s in (prof.chars, prof.tokens):
        if s is not None:
            p = s.percentiles
            lengths.add_row(
                s.unit + ("" if s.exact else " (sampled)"),
                f"{s.count:,}",
                f"{s.mean:,.1f}",
                _fmt_int(s.min),
                _fmt_int(p["p50"]),
                _fmt_int(p["p90"]),
                _fmt_int(p["p99"]),
                _fmt_int(s.max),
            )
    con.print(lengths)
    if prof.tokens is None:
        con.print(f"tokens: not counted ({prof.tokens_reason})")


def render_validation(rep: ValidationReport) -> None:
    """Every kept violation as ``FILE:LINE: where: what``, how many more, and the total."""
    for v in rep.violations:
        print(f"{rep.path}:{v.line}: {v.where + ': ' if v.where else ''}{v.message}")
    more = rep.violation_count - len(rep.violations)
    if more:
        print(f"... and {more:,} more violations not listed")
    print(
        f"{rep.read.records + rep.read.skipped:,} records checked against {rep.schema}: "
        f"{rep.violation_count:,} violation(s)"
    )


def render_records(sample: RecordSample) -> None:
    """The records as JSONL on stdout; skipped invalid lines noted on stderr."""
    from expkit.data.jsonl import dumps_record
    from expkit.render.jsonout import json_safe

    for r in sample.records:  # strict JSON lines, safe on a terminal by JSON escaping alone (issue 35)
        print(json_safe(dumps_record(r.record)))
    if sample.read.skipped:
        lines = ", ".join(map(str, sample.read.first_skipped_lines[:10]))
        print(f"note: skipped {sample.read.skipped} invalid line(s), first at line(s) {lines}", file=sys.stderr)
