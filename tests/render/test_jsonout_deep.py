"""``--json`` of a deeply nested user record (issue 36): ``data head --json`` on a 900-deep JSONL record was exit 3,
a RecursionError in the NaN-keeping copy; the copy is iterative now and the envelope is strict JSON."""

from __future__ import annotations

import json
import math

from expkit.render.jsonout import dumps


def _deep(depth: int, leaf: object) -> dict:
    root: dict = {}
    node = root
    for _ in range(depth - 1):
        node["a"] = {}
        node = node["a"]
    node["a"] = leaf
    return root


def test_a_900_deep_record_is_written_with_its_nan_kept():
    text = dumps({"records": [_deep(900, [math.nan, 1.5, math.inf])]})
    obj = json.loads(text)
    node = obj["records"][0]
    for _ in range(900):
        node = node["a"]
    assert node == ["nan", 1.5, "inf"]


def test_data_head_json_on_a_900_deep_record(cli, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(_deep(900, 1)) + "\n")
    res = cli("data", "head", str(path), "--json")
    assert res.exit_code == 0, res.stderr[-2000:]
    assert json.loads(res.stdout)["result"]["records"][0]["line"] == 1
