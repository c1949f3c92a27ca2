"""``expkit profile``: a trace file in, bucket shares out; bad traces; a crashing script."""

from __future__ import annotations

import json
import textwrap

import pytest


def _trace(path, events):
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def X(name, cat, ts, dur):  # noqa: N802
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def test_trace_json_shares(cli, tmp_path):
    p = _trace(
        tmp_path / "t.json",
        [
            X("ProfilerStep#0", "user_annotation", 0, 100),
            X("aten::addmm", "cpu_op", 0, 71),
            X("aten::add_", "cpu_op", 80, 10),
        ],
    )
    res = cli("profile", str(p), "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)["result"]
    assert data["shares"]["gemm"] == pytest.approx(0.71) and data["dominant"] == "gemm"
    assert data["shares"]["overhead"] == pytest.approx(0.19)
    assert data["verdict"].startswith("GEMM is 71%")
    text = cli("profile", str(p))
    assert "verdict: GEMM is 71%" in text.stdout and "aten::addmm" in text.stdout


def test_not_json_and_no_events(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    res = cli("profile", str(bad))
    assert res.exit_code == 2 and "bad.json:1:1: not JSON" in res.stderr
    empty = _trace(tmp_path / "empty.json", [])
    res = cli("profile", str(empty))
    assert res.exit_code == 2 and "has no profiler events" in res.stderr


def test_no_arguments(cli):
    res = cli("profile")
    assert res.exit_code == 2 and "give a trace file or a command" in res.stderr


def test_missing_script(cli, tmp_path):
    res = cli("profile", "--", "python", str(tmp_path / "nope.py"))
    assert res.exit_code == 2 and "nope.py: no such script" in res.stderr


def test_crashing_script_shows_its_error_and_keeps_the_partial_profile(cli, tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(
        textwrap.dedent("""\
        import torch
        a = torch.randn(128, 128)
        b = a @ a
        def divide(x):
            return x.sum() / 0 if False else 1 / 0
        divide(b)
    """)
    )
    trace = tmp_path / "out" / "trace.json"
    res = cli("profile", "--out", str(trace), "--", "python", str(script))
    assert res.exit_code == 1
    assert "ZeroDivisionError" in res.stderr and "crash.py:5" in res.stderr  # through expkit.diagnose
    assert "partial profile" in res.stderr
    assert trace.is_file()
    assert "aten::mm" in res.stdout and "verdict:" in res.stdout  # the matmul before the crash was profiled


def test_python_c_with_nonzero_exit_is_not_called_a_crash(cli, tmp_path):
    trace = tmp_path / "c.json"
    res = cli(
        "profile",
        "--out",
        str(trace),
        "--json",
        "--",
        "python",
        "-c",
        "import sys, torch; torch.ones(64, 64) @ torch.ones(64, 64); sys.exit(3)",
    )
    assert res.exit_code == 1
    assert "exited with code 3" in res.stderr and "crashed" not in res.stderr
    data = json.loads(res.stdout)["result"]
    assert data["returncode"] == 3 and data["traceback"] is None
    assert data["report"]["shares"]["gemm"] > 0 and trace.is_file()
