"""Terminal width: help and tables fit ``COLUMNS`` (80 included) and help wraps between words, not inside them.

Golden-ish: the outputs are real commands' at an injected width; what is asserted is the width of every line
and that the content survived the wrapping (numbers whole, sentences' words intact).
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from expkit.cli.app import app
from expkit.render.console import PIPE_WIDTH, console_width, fitted_table, out_console

runner = CliRunner()


def _too_wide(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


def _all_commands(group=None, path=()):  # noqa: ANN001, ANN202 - walks click's command tree
    import typer.main

    group = group if group is not None else typer.main.get_command(app)
    for name, cmd in sorted(getattr(group, "commands", {}).items()):
        yield (*path, name), cmd
        yield from _all_commands(cmd, (*path, name))


def test_console_width_takes_columns_else_pipe_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert console_width(io.StringIO()) == 80
    monkeypatch.setenv("COLUMNS", "not-a-number")
    assert console_width(io.StringIO()) == PIPE_WIDTH
    monkeypatch.delenv("COLUMNS")
    assert console_width(io.StringIO()) == PIPE_WIDTH


def test_fitted_table_folds_instead_of_cutting_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    table = fitted_table("name", "value", no_wrap=("value",))
    long_name = "a-model-name-much-longer-than-forty-columns-of-terminal"
    table.add_row(long_name, "0.123456789")
    con = out_console()
    with con.capture() as cap:
        con.print(table)
    text = cap.get()
    assert not _too_wide(text, 40), text
    assert "0.123456789" in text  # a no_wrap cell stays whole
    assert long_name in re.sub(r"\s+", "", text.replace("0.123456789", ""))  # folded, not cut with an ellipsis
    assert "\u2026" not in text


def test_every_help_fits_80_columns_and_keeps_its_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    checked = 0
    for path, cmd in _all_commands():
        res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert res.exit_code == 0, (path, res.output)
        wide = _too_wide(res.output, 80)
        assert not wide, f"expkit {' '.join(path)} --help exceeds 80 columns: {wide[:3]}"
        first = (cmd.help or "").strip().split("\n\n")[0]
        words = " ".join(first.split())[:60].rsplit(" ", 1)[0]
        flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())
        assert words in flat, f"expkit {' '.join(path)} --help: the sentence {words!r} was broken"
        checked += 1
    assert checked >= 20  # every group and its commands (labs, stats, runs, mem, ...)


def test_stats_table_fits_80_columns_with_numbers_whole(tmp_path: Path) -> None:
    lines = ["model,item,score"]
    for m, correct in (("baseline-model", 30), ("candidate-model-with-a-long-name", 36)):
        lines += [f"{m},q{i},{int(i < correct)}" for i in range(60)]
    csv = tmp_path / "results.csv"
    csv.write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["stats", "table", str(csv), "--baseline", "baseline-model"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert not _too_wide(res.stdout, 80), res.stdout
    assert "50.0" in res.stdout and "60.0" in res.stdout  # 30/60 and 36/60, in points
    assert "+10.0" in res.stdout  # the paired delta, not cut


def test_stats_table_in_a_pipe_is_not_squeezed(tmp_path: Path) -> None:
    csv = tmp_path / "results.csv"
    rows = [f"{m},q{i},{i % 2}" for m in ("a" * 70, "b" * 70) for i in range(20)]
    csv.write_text("model,item,score\n" + "\n".join(rows) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    res = runner.invoke(app, ["stats", "table", str(csv)], env={**env, "COLUMNS": ""})
    assert res.exit_code == 0, res.output
    assert "a" * 70 in res.stdout  # one line, whole: grep finds it


def test_labs_list_fits_80_columns() -> None:
    res = runner.invoke(app, ["labs", "list"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert not _too_wide(res.stdout, 80), _too_wide(res.stdout, 80)[:3]
    assert "C2.2" in res.stdout and "C6.6" in res.stdout


def test_runs_ls_table_on_a_terminal_fits_80_columns(tmp_path: Path) -> None:
    """``runs ls`` draws its table only on a terminal (a pipe gets tab-separated lines): run it in a pty."""
    import expkit.runs

    store = tmp_path / "store"
    for seed in (1, 2):
        with expkit.runs.start(
            config={"lr": 3e-4, "note": "x" * 120},
            store=store,
            seed=seed,
            name=f"a-fairly-long-run-name-{seed}",
            capture=expkit.runs.Capture(code_dir=tmp_path),
        ) as run:
            run.log(0, loss=2.5, accuracy=0.125, tokens_per_s=12345.678, val_loss=2.75, grad_norm=0.5)
    env = {**os.environ, "COLUMNS": "80", "TERM": "xterm"}
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "expkit", "runs", "ls", "--store", str(store)],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=env,
        close_fds=True,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=60) == 0
    os.close(primary)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode()).replace("\r", "")
    assert text.count("finished") == 2 and "seed" in text, text
    assert not _too_wide(text, 80), text


def test_output_into_a_closed_pipe_is_not_an_internal_error(tmp_path: Path) -> None:
    """``expkit data head big.jsonl | head -1``: the reader goes away; no traceback, exit 141 (128 + SIGPIPE)."""
    big = tmp_path / "big.jsonl"
    big.write_text("".join(f'{{"text": "{"x" * 100}", "i": {i}}}\n' for i in range(5000)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "expkit", "data", "head", str(big), "-n", "5000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)  # more than 64 KiB is written: the pipe fills while the command still writes
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert "Traceback" not in err and "internal error" not in err, err
