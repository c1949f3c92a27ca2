"""issue 36: `data head` and `data sample` on records nested 900 deep (orjson reads 1024 levels) ran into a
RecursionError in our big-integer walk (exit 3); past orjson's limit the line is one error naming file:line
(exit 2). Run as real processes, as the hostile suite ran them."""

from __future__ import annotations

import subprocess
import sys

import pytest

EXPKIT = [sys.executable, "-m", "expkit"]


@pytest.mark.parametrize("command", ["head", "sample"])
def test_data_head_and_sample_read_a_900_deep_record(tmp_path, command):
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"a": 1}\n' + "[" * 900 + "]" * 900 + "\n" + '{"x":' * 900 + "1" + "}" * 900 + "\n")
    res = subprocess.run([*EXPKIT, "data", command, str(deep)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "RecursionError" not in res.stderr
    assert "[" * 900 + "]" * 900 in res.stdout and '{"x":' * 900 + "1" + "}" * 900 in res.stdout


@pytest.mark.parametrize("command", ["head", "sample"])
def test_a_record_past_orjsons_depth_limit_is_exit_2_naming_file_and_line(tmp_path, command):
    deeper = tmp_path / "deeper.jsonl"
    deeper.write_text('{"a": 1}\n' + "[" * 1100 + "]" * 1100 + "\n")
    res = subprocess.run([*EXPKIT, "data", command, str(deeper)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr[-2000:]
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and f"{deeper}:2:" in err[0] and "depth" in err[0], err
