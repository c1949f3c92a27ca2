"""Exit codes a CI gate can trust when stdout's reader goes away (issue 36 item 2): 141, the shell's code for a
writer killed by SIGPIPE, on every command, ``--help`` included, and no "Exception ignored ...
BrokenPipeError" on stderr. ``sweep --help | head -1`` exited 1 (click's and rich's EPIPE handlers) and
``--version`` too.

The family is generated from the command tree (every group and command, with ``--help``) and from the
commands that print without a model or a GPU; each case is a real process whose stdout is a pipe with no
reader left (``expkit_procs.run_many``: one import, a fork per case). The shell cases below run whole
interpreters, as a CI script does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from expkit_procs import run_many

EXIT_BROKEN_PIPE = 141


def _command_paths() -> list[list[str]]:
    """Every group and command of ``expkit``, the root included, read from the app itself."""
    import typer

    from expkit.cli.app import app

    def walk(cmd, path):  # noqa: ANN001, ANN202
        yield path
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def _printing_cases(tmp_path: Path) -> list[list[str]]:
    """Commands that print a result without a model or a GPU, each plain and with --json."""
    data = tmp_path / "items.jsonl"
    rows = [{"model": f"m{j}", "item": i, "score": (i * 7 + j) % 2} for j in range(4) for i in range(400)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = [
        ["--version"],
        ["stats", "ci", "-k", "40", "-n", "80"],
        ["stats", "power", "--baseline", "0.5", "--delta", "0.05"],
        ["stats", "table", str(data)],
        ["stats", "table", str(data), "--format", "markdown"],
        ["data", "head", str(data), "-n", "1000"],
        ["data", "sample", str(data), "-n", "100", "--seed", "1"],
        ["data", "stats", str(data)],
        ["labs", "list"],
        ["roofline", "gpus"],
        ["runs", "ls", "--store", str(tmp_path / "store")],
    ]
    return base + [[*argv, "--json"] for argv in base if argv != ["--version"]]


@pytest.mark.slow  # ~70 processes: ~25 CPU-s
def test_every_command_and_help_exits_141_when_the_reader_is_gone(tmp_path: Path) -> None:
    cases = [[*path, "--help"] for path in _command_paths()] + _printing_cases(tmp_path)
    results = run_many(cases, tmp_path / "procs", reader_closed=True)
    wrong = [(r.argv, r.code, r.stderr) for r in results if r.code != EXIT_BROKEN_PIPE or r.stderr.strip()]
    assert not wrong, f"{len(wrong)} of {len(results)} cases: {wrong[:5]}"
    assert len(results) > 60


@pytest.mark.parametrize(
    "pipeline",
    [
        "expkit sweep --help | head -1",
        "expkit --help | head -1",
        "expkit stats table --format markdown {data} | head -1",
        "expkit data head {data} -n 5000 | head -1",
        "expkit data head {data} -n 5000 --json | head -1",
    ],
)
def test_head_one_in_a_shell_is_141_or_0_and_quiet(tmp_path: Path, pipeline: str) -> None:
    # as a CI script writes it: `${PIPESTATUS[0]}` is 141 when the pipe closed under the writer, 0 when the
    # writer had finished first; never 1 or 120, never "Exception ignored ... BrokenPipeError"
    data = tmp_path / "items.jsonl"
    rows = [{"model": f"model{j:02d}", "item": i, "score": (i * 7 + j) % 2} for j in range(60) for i in range(100)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expkit = f"{sys.executable} -m expkit"
    script = pipeline.format(data=data).replace("expkit", expkit, 1) + "; echo status=${PIPESTATUS[0]} >&2"
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    status = int(res.stderr.rsplit("status=", 1)[1])
    assert status in (0, EXIT_BROKEN_PIPE), res.stderr[-2000:]
    assert "Exception ignored" not in res.stderr and "Traceback" not in res.stderr
    if "data head" in pipeline:  # 5000 records do not fit a pipe's buffer: the writer always sees the close
        assert status == EXIT_BROKEN_PIPE


def test_a_closed_pipe_is_forgotten_by_the_next_command_in_the_same_process(cli) -> None:
    # the flag that turns click's and rich's exit 1 into 141 is per command: a test process runs many
    from expkit.render.console import note_pipe_closed

    note_pipe_closed()
    res = cli("stats", "ci", "-k", "1", "-n", "2")
    assert res.exit_code == 0 and "1/2" in res.stdout


FULL_STDOUT_CASES = [
    ["--help"],
    ["--version"],
    ["sweep", "--help"],
    ["stats", "ci", "-k", "1", "-n", "2"],
    ["labs", "list", "--json"],
]


def test_a_full_stdout_is_exit_2_and_one_line(tmp_path: Path) -> None:
    # round five: `expkit --help > /dev/full` and `--version` were a traceback (exit 1); a CI gate must see
    # that the output was lost: exit 2 and one line on stderr, for --help as for a command
    import os
    import stat

    if not os.path.exists("/dev/full") or not stat.S_ISCHR(os.stat("/dev/full").st_mode):
        pytest.skip("no /dev/full here")
    procs = []
    for argv in FULL_STDOUT_CASES:
        with open("/dev/full", "wb") as full:
            procs.append(
                (
                    argv,
                    subprocess.Popen(
                        [sys.executable, "-m", "expkit", *argv], stdout=full, stderr=subprocess.PIPE, text=True
                    ),
                )
            )
    for argv, proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, (argv, err[-2000:])
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (argv, err[-2000:])
        assert "No space left on device" in err, (argv, err)


_ESCAPES_TRACEBACK = (
    'Traceback (most recent call last):\n  File "t\u00e9st.py", line 3, in <module>\n    x\n'
    "ValueError: caf\u00e9 \u2192 \x1b[2J bad\n"
)
HOSTILE_ENVIRONMENTS = [
    ({"COLUMNS": "99999999"}, ["--help"]),
    ({"COLUMNS": "99999999"}, ["stats", "table", "{items}"]),
    ({"PYTHONIOENCODING": "ascii"}, ["why", "{tb}"]),
    ({"PYTHONIOENCODING": "latin-1"}, ["why", "{tb}"]),
    ({"PYTHONIOENCODING": "ascii"}, ["stats", "table", "{items}"]),
    ({"COLUMNS": "0", "TERM": "dumb", "LANG": "C", "LC_ALL": "C"}, ["why", "{tb}"]),
]


def test_hostile_environments_end_quickly_without_a_traceback(tmp_path: Path) -> None:
    # round five: COLUMNS=99999999 made `--help` run for minutes (rich laid out 10**8 columns a line);
    # PYTHONIOENCODING=ascii or latin-1 made `why` exit 3 on a non-ASCII character (UnicodeEncodeError)
    import os

    tb, items = tmp_path / "tb.txt", tmp_path / "items.jsonl"
    tb.write_text(_ESCAPES_TRACEBACK, encoding="utf-8")
    rows = [{"model": m, "item": i, "score": (i * 7 + len(m)) % 2} for m in ("a\u00e9", "b") for i in range(20)]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    procs = []
    for env, argv in HOSTILE_ENVIRONMENTS:
        args = [a.format(tb=tb, items=items) for a in argv]
        procs.append(
            (
                env,
                args,
                subprocess.Popen(
                    [sys.executable, "-m", "expkit", *args],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env={**os.environ, **env},
                ),
            )
        )
    for env, args, proc in procs:
        try:
            out, err = proc.communicate(timeout=120)  # ~1 s each at idle; the defect ran for minutes
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"hung: {env} expkit {' '.join(args)}")
        assert proc.returncode == 0, (env, args, err[-2000:])
        assert b"Traceback" not in err and len(out) < 2_000_000, (env, args, err[-2000:])
