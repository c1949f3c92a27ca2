"""``expkit data``: stats, validate, head and sample for JSONL files, streaming in constant memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from expkit.cli.output import emit_json

app = typer.Typer(help="Get data in: look at and check JSONL files in one streaming pass.", no_args_is_help=True)

_FILE_HELP = "A .jsonl or .jsonl.gz file, or '-' for standard input."
_SKIP_HELP = "Leave invalid JSON lines out (their count and line numbers are reported) instead of stopping."


_PROGRESS_MIN_BYTES = 64 * 2**20  # files smaller than this finish in a few seconds: no bar


@contextmanager
def _byte_progress(file: str, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A percent progress (rich bar on a terminal, plain lines in a pipe) for a large plain file."""
    p = Path(file)
    if file == "-" or file.endswith(".gz") or not p.is_file() or p.stat().st_size < _PROGRESS_MIN_BYTES:
        yield None
        return
    from expkit.render.console import progress_steps

    with progress_steps(10, label) as advance:  # 10% steps: ten plain lines in a pipe
        shown = [0]

        def on_progress(done: int, total: int) -> None:
            tenth = min(9, 10 * done // total)
            while shown[0] < tenth:
                shown[0] += 1
                advance(f"{10 * shown[0]}%")

        yield on_progress


def _fmt_int(x: float) -> str:
    return f"{x:,.0f}"


@app.command("stats")
def stats(
    file: str = typer.Argument(..., help=_FILE_HELP),
    field: str = typer.Option(
        None,
        "--field",
        "-f",
        help="Text field to measure (default: the first of "
        "messages, text, prompt, completion, instruction, output, question, answer, content, "
        "conversations that the first record has).",
    ),
    tokenizer: Path = typer.Option(
        None, "--tokenizer", help="Local tokenizer directory (tokenizer.json) to count tokens."
    ),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help=_SKIP_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the profile as JSON."),
) -> None:
    """Record count, keys and their JSON types, and length percentiles of a text field (characters,
    and tokens with --tokenizer), in one pass and constant memory.

    Examples:

      expkit data stats train.jsonl --field messages

      expkit data stats train.jsonl.gz --tokenizer ./my-tokenizer --json

      zcat big.jsonl.gz | expkit data stats - --skip-invalid
    """
    from expkit.data.profile import profile_jsonl

    with _byte_progress(file, f"data stats {file}") as on_progress:
        prof = profile_jsonl(
            file,
            field=field,
            tokenizer_dir=tokenizer,
            on_error="skip" if skip_invalid else "raise",
            on_progress=on_progress,
        )
    if json_out:
        emit_json(prof)
        return
    from rich.table import Table

    from expkit.render.console import out_console

    r = prof.read
    con = out_console()
    con.print(
        f"{r.path}: {r.records:,} records in {r.lines:,} lines ({r.blank:,} blank, {r.skipped:,} skipped"
        + (f", first at lines {', '.join(map(str, r.first_skipped_lines[:10]))}" if r.skipped else "")
        + ")"
        + (f"; {prof.non_object_records:,} records are not JSON objects" if prof.non_object_records else "")
    )
    keys = Table("key", "records", "types")
    for k in prof.keys:
        keys.add_row(k.name, f"{k.count:,}", ", ".join(f"{t} ({c:,})" for t, c in k.types.items()))
    con.print(keys)
    if prof.field is None:
        con.print("no text field found (use --field)")
        return
    lengths = Table(f"length of {prof.field!r}", "records", "mean", "min", "p50", "p90", "p99", "max")
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


@app.command("validate")
def validate(
    file: str = typer.Argument(..., help=_FILE_HELP),
    schema: str = typer.Option(
        "chat",
        "--schema",
        "-s",
        help="chat, prompt-completion, or a JSON Schema file "
        "(checked by jsonschema: Draft 2020-12 unless its $schema says otherwise).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check every record against a schema; print every violation as FILE:LINE: where: what.
    Exit 1 when there is any violation (invalid JSON lines included); exit 2 for a schema file that is not
    a valid JSON Schema.

    Examples:

      expkit data validate train.jsonl --schema chat

      expkit data validate pairs.jsonl --schema prompt-completion --json

      expkit data validate rows.jsonl --schema my_schema.json
    """
    from expkit.data.schema import validate_jsonl
    from expkit.errors import CheckFailed

    with _byte_progress(file, f"data validate {file}") as on_progress:
        rep = validate_jsonl(file, schema=schema, on_progress=on_progress)
    if json_out:
        emit_json(rep)
    else:
        for v in rep.violations:
            print(f"{rep.path}:{v.line}: {v.where + ': ' if v.where else ''}{v.message}")
        more = rep.violation_count - len(rep.violations)
        if more:
            print(f"... and {more:,} more violations not listed")
        print(
            f"{rep.read.records + rep.read.skipped:,} records checked against {rep.schema}: "
            f"{rep.violation_count:,} violation(s)"
        )
    if not rep.ok:
        raise CheckFailed(f"{rep.path}: {rep.violation_count} violation(s) of schema {rep.schema}")


def _print_records(sample, json_out: bool) -> None:
    if json_out:
        emit_json(sample)
        return
    import sys

    from expkit.data.jsonl import dumps_record

    for r in sample.records:
        print(dumps_record(r.record))
    if sample.read.skipped:
        lines = ", ".join(map(str, sample.read.first_skipped_lines[:10]))
        print(f"note: skipped {sample.read.skipped} invalid line(s), first at line(s) {lines}", file=sys.stderr)


@app.command("head")
def head(
    file: str = typer.Argument(..., help=_FILE_HELP),
    n: int = typer.Option(5, "-n", help="Number of records."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help=_SKIP_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print records with their line numbers as JSON."),
) -> None:
    """The first N records, as JSONL (reading stops after them).

    Examples:

      expkit data head train.jsonl -n 3

      expkit data head train.jsonl.gz --json
    """
    from expkit.data.sampling import head_records

    _print_records(head_records(file, n=n, on_error="skip" if skip_invalid else "raise"), json_out)


@app.command("sample")
def sample(
    file: str = typer.Argument(..., help=_FILE_HELP),
    n: int = typer.Option(5, "-n", help="Number of records."),
    seed: int = typer.Option(0, "--seed", help="Seed: the same seed and file give the same sample."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help=_SKIP_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print records with their line numbers as JSON."),
) -> None:
    """N records drawn uniformly from the whole file (one pass, memory for N records), in file order.

    Examples:

      expkit data sample train.jsonl -n 10 --seed 1

      expkit data sample train.jsonl --json | jq '.records[].line'
    """
    from expkit.data.sampling import sample_records

    _print_records(sample_records(file, n=n, seed=seed, on_error="skip" if skip_invalid else "raise"), json_out)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="data")
