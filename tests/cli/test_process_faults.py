"""Faults only a real process sees (issue 21's hostile run): a file-size limit during a write, a reader that
closes the pipe. Each case runs ``expkit`` as a subprocess, not through CliRunner."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

EXPKIT = [sys.executable, "-m", "expkit"]


def _limit_file_size(max_bytes: int):  # noqa: ANN202 - a preexec_fn
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return apply


def _many_records(tmp_path: Path) -> Path:
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": "x" * 50}) + "\n" for i in range(5000)))
    return path


def test_a_file_size_limit_during_output_is_one_line_exit_2(tmp_path: Path) -> None:
    # `ulimit -f`: Python ignores SIGXFSZ, so the write raises EFBIG without a filename; it was a traceback, exit 3
    data = _many_records(tmp_path)
    for extra in ([], ["--json"]):
        with open(tmp_path / "out.txt", "wb") as out:
            res = subprocess.run(
                [*EXPKIT, "data", "head", str(data), "-n", "5000", *extra],
                stdout=out,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=_limit_file_size(16 * 1024),
                timeout=120,
            )
        assert res.returncode == 2, res.stderr[-2000:]
        assert "Traceback" not in res.stderr
        assert "could not write the output: File too large" in res.stderr and "ulimit -f" in res.stderr


def test_a_closed_pipe_under_a_rich_table_is_141(tmp_path: Path) -> None:
    # rich's own broken-pipe handler exited 1; `expkit labs list | head -1` is not a failure
    proc = subprocess.Popen([*EXPKIT, "labs", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the first write
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err[-2000:]
    assert "Traceback" not in err


def test_escape_sequences_from_data_never_reach_the_terminal(tmp_path: Path) -> None:
    # a key and a value carrying an OSC title change and a clear-screen; a path with a bell (issue 21: echoed)
    data = tmp_path / "esc.jsonl"
    data.write_text(json.dumps({"a\x1b]0;pwned\x07key": 1, "model": "x\x1b[2Jy"}) + "\n")
    for args in (
        ["data", "stats", str(data)],
        ["data", "head", str(data)],
        ["data", "stats", str(tmp_path / "n\x1b[31m\x07.jsonl")],
    ):
        res = subprocess.run([*EXPKIT, *args], capture_output=True, timeout=120)
        assert b"\x1b" not in res.stdout and b"\x07" not in res.stdout, args
        assert b"\x1b" not in res.stderr and b"\x07" not in res.stderr, args
        assert b"Traceback" not in res.stderr
    shown = subprocess.run([*EXPKIT, "data", "stats", str(data)], capture_output=True, timeout=120).stdout
    assert b"akey" in shown  # the key is shown, its escape removed
