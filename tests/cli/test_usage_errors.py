"""A usage error click finds while parsing (a bad option value, a missing argument, an unknown option or
command) is one line on stderr, ``error: <what> (try `expkit CMD --help`)``, exit 2, also with --json (which
adds the error envelope on stdout). Issue 21: 13 such cases printed typer's 5-line usage box. Real processes:
the box was printed by click's standalone handler, past anything CliRunner shows the same way."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CASES = [
    (["stats", "ci", "--n", "abc"], "Invalid value for '--n' / '-n'", "expkit stats ci"),
    (["stats", "ci", "--bogus"], "No such option: --bogus", "expkit stats ci"),
    (["stats", "ci", "--n"], "Option '--n' requires an argument", "expkit stats ci"),
    (["mem"], "Missing argument 'model'", "expkit mem"),
    (["nosuch"], "No such command 'nosuch'", "expkit"),
    (["--bogus"], "No such option: --bogus", "expkit"),
    (["runs", "ls", "extra-arg"], "Got unexpected extra argument(s) (extra-arg)", "expkit runs ls"),
    (["data", "head", "x.jsonl", "-n", "many"], "Invalid value for '-n'", "expkit data head"),
]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "expkit", *args], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize("args, what, command", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_usage_error_is_one_line_exit_2(args, what, command):
    res = _run(args)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr  # no usage box, no "Try ... for help" line
    assert lines[0].startswith(f"error: {what}") and lines[0].endswith(f"(try `{command} --help`)"), lines[0]
    assert "╭" not in res.stderr and res.stdout == ""


JSON_CASES = [c for c in CASES if c[0][-1] != "--n"]  # after a bare --n, --json would be its value


@pytest.mark.parametrize("args, what, command", JSON_CASES, ids=[" ".join(c[0]) for c in JSON_CASES])
def test_with_json_the_usage_error_is_an_envelope_too(args, what, command):
    res = _run([*args, "--json"])
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith(f"error: {what}")
    error = json.loads(res.stdout)["error"]
    assert error["kind"] == "UsageError" and error["message"].startswith(what)


def test_help_and_a_group_alone_keep_their_codes():
    assert _run(["stats", "ci", "--help"]).returncode == 0
    alone = _run(["stats"])  # no_args_is_help: the group's help, exit 2 as click has it
    assert alone.returncode == 2 and "ci" in alone.stdout and alone.stderr == ""
    assert _run(["--version"]).stdout.startswith("expkit ")
