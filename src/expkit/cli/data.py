"""``expkit data``: stats, validate, head and sample for JSONL files, streaming in constant memory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from expkit.cli.output import emit
from expkit.data.profile import MAX_KEYS

if TYPE_CHECKING:
    from expkit.data.jsonl import OnError

app = typer.Typer(help="Get data in: look at and check JSONL files in one streaming pass.", no_args_is_help=True)

_FILE_HELP = "A .jsonl or .jsonl.gz file, or '-' for standard input."
_ON_ERROR_HELP = (
    "Invalid JSON lines: raise (stop, exit 2, naming file:line:column) or skip (leave them out; their count "
    "and line numbers are reported)."
)


def _on_error(value: str) -> OnError:
    """``--on-error`` as the readers' ``on_error``: raise or skip (the same flag as ``expkit sft``)."""
    from expkit.errors import UsageError

    if value not in ("raise", "skip"):
        raise UsageError(f"--on-error {value!r} is not known", hint="use raise or skip")
    return cast("OnError", value)


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
    on_error: str = typer.Option("raise", "--on-error", help=_ON_ERROR_HELP),
    max_keys: int = typer.Option(
        MAX_KEYS, "--keys", help="List at most this many keys, the most frequent (0: all); every key is counted."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the profile as JSON."),
) -> None:
    """Record count, keys and their JSON types, and length percentiles of a text field (characters,
    and tokens with --tokenizer), in one pass and constant memory.

    Examples:

      expkit data stats train.jsonl --field messages

      expkit data stats train.jsonl.gz --tokenizer ./my-tokenizer --json

      zcat big.jsonl.gz | expkit data stats - --on-error skip

      expkit data stats wide.jsonl --keys 0
    """
    from expkit.data.profile import profile_jsonl
    from expkit.render.console import byte_progress
    from expkit.render.data import render_profile

    mode = _on_error(on_error)
    if max_keys < 0:
        from expkit.errors import UsageError

        raise UsageError(f"--keys {max_keys} is negative", hint="give the number of keys to list, or 0 for all")
    with byte_progress(file, f"data stats {file}") as on_progress:
        prof = profile_jsonl(
            file,
            field=field,
            tokenizer_dir=tokenizer,
            on_error=mode,
            on_progress=on_progress,
            max_keys=max_keys or None,
        )
    emit(prof, json_out, human=render_profile)


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
    from expkit.render.console import byte_progress
    from expkit.render.data import render_validation

    with byte_progress(file, f"data validate {file}") as on_progress:
        rep = validate_jsonl(file, schema=schema, on_progress=on_progress)
    emit(rep, json_out, human=render_validation)
    rep.raise_if_failed()


@app.command("head")
def head(
    file: str = typer.Argument(..., help=_FILE_HELP),
    n: int = typer.Option(5, "-n", help="Number of records."),
    on_error: str = typer.Option("raise", "--on-error", help=_ON_ERROR_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print records with their line numbers as JSON."),
) -> None:
    """The first N records, as JSONL (reading stops after them).

    Examples:

      expkit data head train.jsonl -n 3

      expkit data head train.jsonl.gz --json
    """
    from expkit.data.sampling import head_records
    from expkit.render.data import render_records

    emit(head_records(file, n=n, on_error=_on_error(on_error)), json_out, human=render_records)


@app.command("sample")
def sample(
    file: str = typer.Argument(..., help=_FILE_HELP),
    n: int = typer.Option(5, "-n", help="Number of records."),
    seed: int = typer.Option(0, "--seed", help="Seed: the same seed and file give the same sample."),
    on_error: str = typer.Option("raise", "--on-error", help=_ON_ERROR_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print records with their line numbers as JSON."),
) -> None:
    """N records drawn uniformly from the whole file (one pass, memory for N records), in file order.

    Examples:

      expkit data sample train.jsonl -n 10 --seed 1

      expkit data sample train.jsonl --json | jq '.records[].line'
    """
    from expkit.data.sampling import sample_records
    from expkit.render.data import render_records

    emit(sample_records(file, n=n, seed=seed, on_error=_on_error(on_error)), json_out, human=render_records)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="data")
