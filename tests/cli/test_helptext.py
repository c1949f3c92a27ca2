"""Help rewrapping: prose paragraphs become one line (rich wraps them at the terminal width), examples stay."""

from __future__ import annotations

from typer.testing import CliRunner

from expkit.cli.app import app
from expkit.cli.helptext import first_paragraph, rewrap_paragraphs

runner = CliRunner()


def test_prose_paragraphs_are_joined_and_examples_kept() -> None:
    doc = """Run COMMAND as a recorded run: the seven
    records, output.log.

    Exit codes: 0 ok, 1 a check failed,
    2 bad input.

    Examples:

      expkit runs exec -- python train.py
      expkit runs ls
    """
    assert rewrap_paragraphs(doc).split("\n\n") == [
        "Run COMMAND as a recorded run: the seven records, output.log.",
        "Exit codes: 0 ok, 1 a check failed, 2 bad input.",
        "Examples:",
        "  expkit runs exec -- python train.py\n  expkit runs ls",
    ]
    assert rewrap_paragraphs("\b\nkeep\nthese lines") == "\b\nkeep\nthese lines"
    assert first_paragraph("One\n  two.\n\nThree.") == "One two."


def test_root_help_states_exit_codes_and_the_json_envelope_in_whole_sentences() -> None:
    res = runner.invoke(app, ["--help"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "Exit codes: 0 ok, 1 a check ran and failed, 2 bad usage or input, 3 internal error" in flat
    assert '"error": {"kind", "message", "where"}' in flat
    # a sentence is broken only by rich's wrapping at 80 columns, never by a docstring's own line break:
    lines = [line.strip() for line in res.output.splitlines()]
    assert "error (a bug: please" not in lines


def test_group_command_lists_wrap_at_the_terminal_not_at_docstring_breaks() -> None:
    res = runner.invoke(app, ["runs", "--help"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    rows = [line for line in res.output.splitlines() if line.startswith("│")]
    widths = [len(line.rstrip("│").rstrip()) for line in rows]
    # wrapped lines of a summary fill the panel: none of the continuation lines ends far before the edge
    # except a summary's last; a docstring's own line breaks made lines of ~40 characters before
    short = [line for line, w in zip(rows, widths, strict=True) if w < 40 and line.strip("│ ").count(" ") > 3]
    assert not short, short
