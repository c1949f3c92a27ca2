"""Exit codes a CI gate can trust when stdout's reader goes away (issue 36 item 2): 141, the shell's code for a
writer killed by SIGPIPE, on every command, ``--help`` included, and no "Exception ignored ...
BrokenPipeError" on stderr. ``sweep --help | head -1`` exited 1 (click's and rich's EPIPE handlers) and
``--version`` too.

The family is generated from the command tree (every group and command, with ``--help``) and from the
commands that print without a model or a GPU; each case is a real process whose stdout is a pipe with no
reader left. One interpreter imports expkit and forks a child per case; the child runs ``main()``, then
flushes stdout as the interpreter's last step does (where "Exception ignored" and exit 120 came from) and
ends with ``os._exit``, skipping a teardown that costs more than the command. The shell cases below run
whole interpreters, as a CI script does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

EXIT_BROKEN_PIPE = 141

# The children: each runs `expkit ARGV` with stdout a pipe whose reader is closed before the first write.
_DRIVER = textwrap.dedent(
    """
    import json, os, sys
    from expkit.cli.app import main

    def child(argv, w, errpath):
        os.dup2(w, 1)
        os.dup2(os.open(errpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        sys.argv = ["expkit", *argv]
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        try:  # what the interpreter does last, as Python reports it (exit 120), without its slow teardown
            sys.stdout.flush()
        except Exception as exc:
            sys.stderr.write(f"Exception ignored while flushing sys.stdout: {exc!r}\\n")
            code = 120
        sys.stderr.flush()
        os._exit(code)

    cases = json.loads(sys.argv[1])
    errdir = sys.argv[2]
    results = []
    for start in range(0, len(cases), 4):  # four children at a time
        running = []
        for i in range(start, min(start + 4, len(cases))):
            r, w = os.pipe()
            os.close(r)  # the reader is gone before the child writes
            pid = os.fork()
            if pid == 0:
                child(cases[i], w, os.path.join(errdir, f"{i}.err"))
            os.close(w)
            running.append((i, pid))
        for i, pid in running:
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            results.append([cases[i], code, open(os.path.join(errdir, f"{i}.err")).read()[-2000:]])
    print(json.dumps(results))
    """
)


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


def _run_closed_pipe(cases: list[list[str]], tmp_path: Path) -> list[tuple[list[str], int, str]]:
    errdir = tmp_path / "err"
    errdir.mkdir(exist_ok=True)
    res = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(cases), str(errdir)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return [tuple(r) for r in json.loads(res.stdout.splitlines()[-1])]  # type: ignore[misc]


@pytest.mark.slow  # ~70 processes: ~25 CPU-s
def test_every_command_and_help_exits_141_when_the_reader_is_gone(tmp_path: Path) -> None:
    cases = [[*path, "--help"] for path in _command_paths()] + _printing_cases(tmp_path)
    results = _run_closed_pipe(cases, tmp_path)
    wrong = [(argv, code, err) for argv, code, err in results if code != EXIT_BROKEN_PIPE or err.strip()]
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
