"""Per-item output files: MMLU-Pro's lists with no flags, a field mapping for any JSON/JSONL (nested fields
too), .gz and .zip read directly, non-record entries counted, bad input named; and the ``mmlu-pro`` reader
in the EvalReader registry (``stats table --from mmlu-pro``)."""

from __future__ import annotations

import gzip
import json
import zipfile

import numpy as np
import pytest

from expkit.errors import InputError, UsageError
from expkit.integrations.item_files import (
    FieldMap,
    field_map,
    load_entries,
    model_name_of,
    read_model_outputs,
)
from expkit.integrations.readers import eval_readers, read_eval_items

RECORDS = [
    {"question_id": 1, "category": "law", "answer": "A", "pred": "A"},
    {"question_id": 2, "category": "law", "answer": "B", "pred": "C"},
    "a plain string, not a record",
    {"question_id": 3, "category": "math", "answer": "C", "pred": None},
    {"question_id": 4, "category": "math", "answer": "D", "pred": "D"},
]


def _write(path, records, how="json"):
    text = json.dumps(records) if how == "json" else "\n".join(json.dumps(r) for r in records)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    elif path.suffix == ".zip":
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("model_outputs_x_5shots.json", text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["m.json", "m.json.gz", "m.zip"])
def test_mmlu_pro_format_plain_gz_zip(tmp_path, name):
    out = read_model_outputs(_write(tmp_path / name, RECORDS))
    assert out.items == ("1", "2", "3", "4") and out.skipped == 1
    assert out.scores[0] == 1.0 and out.scores[1] == 0.0 and np.isnan(out.scores[2]) and out.scores[3] == 1.0
    assert out.unparsed.tolist() == [False, False, True, False]
    assert out.answers == {"A", "B", "C", "D"}


def test_field_mapping_jsonl_with_nested_score_and_cluster(tmp_path):
    rows = [{"id": f"q{i}", "doc": {"passage": i // 2}, "metrics": {"acc": i % 2}} for i in range(6)]
    rows[4]["metrics"]["acc"] = None
    path = _write(tmp_path / "run.jsonl", rows, how="jsonl")
    out = read_model_outputs(path, FieldMap(item="id", score="metrics.acc", cluster="doc.passage"))
    assert out.items[0] == "q0" and out.clusters == ("0", "0", "1", "1", "2", "2")
    assert out.scores[:4].tolist() == [0.0, 1.0, 0.0, 1.0] and out.unparsed.tolist()[4]


def test_bad_input_names_file_and_place(tmp_path):
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(InputError, match="the file is empty"):
        load_entries(tmp_path / "empty.json")
    with pytest.raises(InputError, match="no records: 2 entries, none a record"):
        read_model_outputs(_write(tmp_path / "s.json", ["x", "y"]), FieldMap(item="question_id", score="s"))
    with pytest.raises(InputError, match="entry 1: field 'score' is missing"):
        read_model_outputs(_write(tmp_path / "m.json", RECORDS), FieldMap(item="question_id", score="score"))
    twice = [RECORDS[0], RECORDS[0]]
    with pytest.raises(InputError, match="item '1' appears twice"):
        read_model_outputs(_write(tmp_path / "t.json", twice))
    with pytest.raises(InputError, match="not MMLU-Pro's format"):
        read_model_outputs(_write(tmp_path / "o.json", [{"id": 1, "ok": 1}]))
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n{oops\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: invalid JSON"):
        load_entries(tmp_path / "bad.jsonl")


def test_field_map_options():
    assert field_map(item=None, score=None, pred=None, answer=None, cluster="c") is None
    assert field_map(item="id", score="s", pred=None, answer=None, cluster=None) == FieldMap("id", "s")
    for kw in (
        {"item": None, "score": "s", "pred": None, "answer": None},
        {"item": "id", "score": "s", "pred": "p", "answer": "a"},
        {"item": "id", "score": None, "pred": "p", "answer": None},
    ):
        with pytest.raises(UsageError):
            field_map(cluster=None, **kw)


def test_model_name_keeps_version_dots():
    assert model_name_of("x/model_outputs_Qwen1.5-72B-Chat_5shots.json.gz") == "model_outputs_Qwen1.5-72B-Chat_5shots"
    assert model_name_of("runs/Mistral-7B-v0.1.zip") == "Mistral-7B-v0.1"


def test_mmlu_pro_reader_is_registered(tmp_path):
    assert "mmlu-pro" in eval_readers()
    a = _write(tmp_path / "model_outputs_a_5shots.json.gz", RECORDS)
    b = _write(tmp_path / "model_outputs_b_5shots.json.gz", [dict(r, pred="A") for r in RECORDS if isinstance(r, dict)])
    found = read_eval_items("mmlu-pro", [a, b])
    (task,) = found.tasks
    assert task.results.models == ("model_outputs_a_5shots", "model_outputs_b_5shots")
    assert task.results.scores["model_outputs_a_5shots"] == {"1": 1.0, "2": 0.0, "3": 0.0, "4": 1.0}
    assert any("1 unparsed answers scored 0, 1 entries skipped" in n for n in found.notes)
