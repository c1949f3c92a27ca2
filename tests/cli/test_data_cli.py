"""``expkit data stats|validate|head|sample`` in-process: exit codes and content."""

from __future__ import annotations

import json

import orjson


def _chat(tmp_path, n=50, bad_line=False):
    rows = [
        {"id": i, "messages": [{"role": "user", "content": "q" * (i + 1)}, {"role": "assistant", "content": "a"}]}
        for i in range(n)
    ]
    rows[9]["messages"][0]["role"] = "human"  # line 10
    p = tmp_path / "chat.jsonl"
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows) + (b'{"id": 50,\n' if bad_line else b""))
    return p


def test_stats_table_and_json(cli, tmp_path):
    p = _chat(tmp_path)
    res = cli("data", "stats", str(p))
    assert res.exit_code == 0
    assert "50 records in 50 lines" in res.stdout and "messages" in res.stdout and "array (50)" in res.stdout
    data = json.loads(cli("data", "stats", str(p), "--json").stdout)["result"]
    # user content 1..50 chars + "\n" + "a": 3..52
    assert data["chars"]["min"] == 3 and data["chars"]["max"] == 52 and data["field"] == "messages"


def test_stats_bad_line_exit_2_unless_skipped(cli, tmp_path):
    p = _chat(tmp_path, bad_line=True)
    res = cli("data", "stats", str(p))
    assert res.exit_code == 2 and "chat.jsonl:51:" in res.stderr and "--on-error skip" in res.stderr
    res = cli("data", "stats", str(p), "--on-error", "skip")
    assert res.exit_code == 0 and "1 skipped, first at lines 51" in res.stdout


def test_validate_lists_violations_and_exits_1(cli, tmp_path):
    p = _chat(tmp_path, bad_line=True)
    res = cli("data", "validate", str(p), "--schema", "chat")
    assert res.exit_code == 1
    assert f"{p}:10: messages[0].role: must be one of system, user, assistant, tool, got 'human'" in res.stdout
    assert f"{p}:51: column" in res.stdout and "2 violation(s)" in res.stdout
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"prompt": "p", "completion": "c"}\n')
    res = cli("data", "validate", str(ok), "--schema", "prompt-completion", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["result"]["violation_count"] == 0


def test_head_sample_and_stdin(cli, tmp_path):
    p = _chat(tmp_path)
    res = cli("data", "head", str(p), "-n", "2")
    assert res.exit_code == 0 and [json.loads(x)["id"] for x in res.stdout.splitlines()] == [0, 1]
    a = cli("data", "sample", str(p), "-n", "5", "--seed", "7", "--json")
    b = cli("data", "sample", str(p), "-n", "5", "--seed", "7", "--json")
    assert a.exit_code == 0 and a.stdout == b.stdout
    assert len(json.loads(a.stdout)["result"]["records"]) == 5
    res = cli("data", "head", "-", "-n", "1", input='{"x": 1}\n{"x": 2}\n')
    assert res.exit_code == 0 and res.stdout.strip() == '{"x":1}'


def test_missing_file_and_directory(cli, tmp_path):
    res = cli("data", "stats", str(tmp_path / "nope.jsonl"))
    assert res.exit_code == 2 and "nope.jsonl: no such file" in res.stderr
    res = cli("data", "head", str(tmp_path))
    assert res.exit_code == 2 and "is a directory" in res.stderr
