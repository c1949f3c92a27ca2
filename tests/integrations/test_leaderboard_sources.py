"""What ``stats leaderboard`` reads, aligned into one score matrix: MMLU-Pro lists, a field mapping, the rows
files of ``stats table`` (every model a row), lm-eval output directories and Inspect logs (written as those
tools write them, by the writers of test_lmeval.py and test_inspect.py), labels, duplicate names refused,
and the published CSV."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_inspect import _sample, write_eval_log, write_json_log  # same folder: pytest puts it on sys.path
from test_lmeval import write_lmeval_run

from expkit.errors import InputError, UsageError
from expkit.integrations.item_files import FieldMap
from expkit.integrations.leaderboard_sources import LeaderboardRequest, read_published, read_score_matrix
from expkit.integrations.readers import EvalQuery, parse_label


def _mmlu(path, preds, answers="ABCD"):
    recs = [{"question_id": i, "answer": answers[i], "pred": p} for i, p in enumerate(preds)]
    path.write_text(json.dumps(recs))
    return str(path)


def test_mmlu_files_align_on_the_union_of_items(tmp_path):
    a = _mmlu(tmp_path / "a.json", ["A", "B", None, "A"])
    b = tmp_path / "b.json"
    b.write_text(json.dumps([{"question_id": 3, "answer": "D", "pred": "D"}, "junk"]))
    m = read_score_matrix(LeaderboardRequest(paths=(a, str(b))))
    assert m.names == ("a", "b") and m.skipped == (0, 1) and m.n_choices == 4
    np.testing.assert_array_equal(m.scores[0], [1, 1, np.nan, 0])
    np.testing.assert_array_equal(m.scores[1], [np.nan, np.nan, np.nan, 1])
    assert m.unparsed[0].tolist() == [False, False, True, False] and not m.unparsed[1].any()
    assert any("b: scored 1 of the 4 items" in n for n in m.notes)
    assert any("1 entries of" in n and "not records" in n for n in m.notes)


def test_field_mapping_and_labels(tmp_path):
    p = tmp_path / "run.jsonl"
    p.write_text("\n".join(json.dumps({"id": i, "ok": i % 2, "grp": i // 2}) for i in range(6)))
    fields = FieldMap(item="id", score="ok", cluster="grp")
    m = read_score_matrix(LeaderboardRequest(labels=(parse_label(f"x={p}"), parse_label(f"y={p}")), fields=fields))
    assert m.names == ("x", "y") and m.clusters.tolist() == [0, 0, 1, 1, 2, 2]


def test_rows_file_gives_every_model(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps({"model": m, "item": i, "score": (i + k) % 2}) for k, m in enumerate("pq") for i in range(4)
        )
    )
    m = read_score_matrix(LeaderboardRequest(paths=(str(rows),)))
    assert m.names == ("p", "q") and m.scores.tolist() == [[0, 1, 0, 1], [1, 0, 1, 0]]


def test_rows_csv_as_stats_table_reads_it(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "model,item,score,cluster\n"
        + "".join(f"{m},q{i},{(i + k) % 2},c{i // 2}\n" for k, m in enumerate("pq") for i in range(4))
    )
    m = read_score_matrix(LeaderboardRequest(paths=(str(rows),)))
    assert m.names == ("p", "q") and m.scores.tolist() == [[0, 1, 0, 1], [1, 0, 1, 0]]
    assert m.clusters.tolist() == [0, 0, 1, 1]
    with pytest.raises(UsageError, match="--cluster applies to per-model JSON files, not to items input"):
        read_score_matrix(LeaderboardRequest(paths=(str(rows),), cluster="cluster"))


def test_lm_eval_directories(tmp_path):
    a = write_lmeval_run(tmp_path / "base", "org/base", {"gsm8k": {"strict-match": {"exact_match": [1, 0, 1]}}})
    b = write_lmeval_run(tmp_path / "tuned", "org/tuned", {"gsm8k": {"strict-match": {"exact_match": [1, 1, 1]}}})
    m = read_score_matrix(LeaderboardRequest(paths=(str(a.parent), str(b.parent))))
    assert m.names == ("base", "tuned") and m.scores.tolist() == [[1, 0, 1], [1, 1, 1]]
    two = write_lmeval_run(tmp_path / "two", "org/two", {t: {"none": {"acc": [1, 0]}} for t in ("arc_easy", "piqa")})
    with pytest.raises(UsageError, match="2 tasks"):
        read_score_matrix(LeaderboardRequest(paths=(str(two.parent), str(a.parent))))
    q = EvalQuery(tasks=("piqa",))
    assert read_score_matrix(LeaderboardRequest(paths=(str(two.parent),) * 1, query=q)).names == ("two",)


def test_inspect_logs(tmp_path):
    s1 = [_sample(f"q{i}", 1, "C" if i % 2 else "I") for i in range(4)]
    s2 = [_sample(f"q{i}", 1, "C") for i in range(4)]
    a = write_json_log(tmp_path / "a.json", "arc", "openai/a", s1)
    b = write_eval_log(tmp_path / "b.eval", "arc", "openai/b", s2)
    m = read_score_matrix(LeaderboardRequest(paths=(str(a), str(b)), reader=None))
    assert m.names == ("a", "b") and m.scores[1].tolist() == [1, 1, 1, 1]


def test_two_files_with_one_name_and_unknown_records(tmp_path):
    (tmp_path / "x").mkdir()
    a = _mmlu(tmp_path / "m.json", ["A"], "A")
    b = _mmlu(tmp_path / "x" / "m.json", ["A"], "A")
    with pytest.raises(UsageError, match="two models are named 'm'"):
        read_score_matrix(LeaderboardRequest(paths=(a, b)))
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"id": 1, "correct": True}]))
    with pytest.raises(InputError, match="no reader knows these records"):
        read_score_matrix(LeaderboardRequest(paths=(str(odd), a)))


def test_published_csv_percent_or_fraction_and_name_matching(tmp_path):
    models = ("model_outputs_Qwen1.5-72B-Chat_5shots", "model_outputs_Qwen1.5-7B-Chat_5shots")
    pct = tmp_path / "p.csv"
    pct.write_text("model,score\nQwen1.5-72B-Chat,52.64\n")
    assert read_published(str(pct), models) == {models[0]: pytest.approx(0.5264)}
    frac = tmp_path / "f.csv"
    frac.write_text("model,score\nmodel_outputs_Qwen1.5-7B-Chat_5shots,0.3\n")
    assert read_published(str(frac), models) == {models[1]: 0.3}
    amb = tmp_path / "a.csv"
    amb.write_text("model,score\nQwen1.5,50\n")
    with pytest.raises(InputError, match="matches 2 models"):
        read_published(str(amb), models)
    bad = tmp_path / "b.csv"
    bad.write_text("name,acc\nx,1\n")
    with pytest.raises(InputError, match="model and score"):
        read_published(str(bad), models)
