"""Eval tables: reading JSONL/CSV with line-numbered errors, duplicates refused, the table's rows."""

from __future__ import annotations

import json

import orjson
import pytest

from expkit.errors import InputError, UsageError
from expkit.stats.tables import build_eval_table, read_item_results


def _write_jsonl(path, rows):
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _rows(model, scores, start=0):
    return [{"model": model, "item": f"q{i + start}", "score": s} for i, s in enumerate(scores)]


def test_table_rows_wilson_and_paired_delta(tmp_path):
    base = [1] * 70 + [0] * 30
    new = [1] * 70 + [1] * 20 + [0] * 10  # 20 items fixed, none broken
    f = _write_jsonl(tmp_path / "r.jsonl", _rows("base", base) + _rows("new", new))
    t = build_eval_table(read_item_results(f))
    assert t.baseline == "base"
    row = {r.model: r for r in t.models}
    # R: prop.test(70, 100, correct = FALSE)$conf.int = 0.6041515 0.7810511
    assert (row["base"].low, row["base"].high) == pytest.approx((0.6041515, 0.7810511), abs=1e-7)
    (c,) = t.comparisons
    assert c.comparison.delta == pytest.approx(0.2) and c.comparison.a_only == 20 and c.comparison.b_only == 0
    assert c.verdict == "better" and c.comparison.method == "mcnemar-exact"


def test_csv_with_clusters(tmp_path):
    lines = ["model,item,score,cluster"]
    for m, shift in (("a", 0), ("b", 1)):
        for i in range(40):
            lines.append(f"{m},q{i},{(i + shift) % 2},c{i // 4}")
    f = tmp_path / "r.csv"
    f.write_text("\n".join(lines) + "\n")
    t = build_eval_table(read_item_results(f), baseline="b")
    assert t.comparisons[0].comparison.method == "clustered-se"
    assert any("10 clusters" in n for n in t.notes)


def test_malformed_row_names_its_line(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"model": "a", "item": "q1", "score": 1}\n{"model": "a", "item": "q2", "score": "high"}\n')
    with pytest.raises(InputError, match=r"r.jsonl:2: score 'high' is not a number"):
        read_item_results(f)


def test_missing_field_and_bad_json_name_their_line(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"model": "a", "item": "q1", "score": 1}\n\n{"model": "a", "score": 1}\n')
    with pytest.raises(InputError, match=r":3: field 'item' is missing"):
        read_item_results(f)
    f.write_text('{"model": "a", "item": "q1", "score": 1}\n{"model": \n')
    with pytest.raises(InputError, match=r":2:\d+: invalid JSON"):
        read_item_results(f)


def test_duplicate_pair_is_refused_naming_both_lines(tmp_path):
    f = _write_jsonl(tmp_path / "r.jsonl", [*_rows("a", [1, 0]), {"model": "a", "item": "q0", "score": 0}])
    with pytest.raises(InputError, match=r":3: model 'a' item 'q0' appears twice \(first on line 1\)"):
        read_item_results(f)


def test_empty_file_is_refused(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text("\n")
    with pytest.raises(InputError, match=r"no result rows"):
        read_item_results(f)
    g = tmp_path / "r.csv"
    g.write_text("model,item,score\n")
    with pytest.raises(InputError, match=r"no result rows"):
        read_item_results(g)


def test_csv_header_without_score(tmp_path):
    g = tmp_path / "r.csv"
    g.write_text("model,item,value\na,q1,1\n")
    with pytest.raises(InputError, match=r"r.csv:1: the header has no column 'score'"):
        read_item_results(g)


def test_unknown_baseline_lists_models(tmp_path):
    f = _write_jsonl(tmp_path / "r.jsonl", _rows("a", [1, 0]) + _rows("b", [1, 1]))
    with pytest.raises(UsageError, match=r"baseline 'c'.*models: a, b"):
        build_eval_table(read_item_results(f), baseline="c")


def test_mismatched_items_pair_on_the_shared_ones_naming_both_sides(tmp_path):
    # a: items 0..39, b: items 5..44 -> 35 shared; the baseline a and the model b named, not "A"/"B"
    f = _write_jsonl(tmp_path / "r.jsonl", _rows("a", [1, 0] * 20) + _rows("b", [1, 1] * 20, start=5))
    t = build_eval_table(read_item_results(f))
    c = t.comparisons[0].comparison
    assert c.paired and c.n_common == 35
    assert (
        "b vs baseline a: paired on the 35 shared items; dropped 5 of 40 items only in a and 5 of 40 only in b"
        in t.notes
    )
    u = build_eval_table(read_item_results(f), pairing="unpaired")
    assert not u.comparisons[0].comparison.paired
    assert "b vs baseline a: unpaired as asked, over all 40 items of a and 40 of b" in u.notes


def test_holm_applies_across_rows(tmp_path):
    base = [1, 0] * 100
    rows = _rows("base", base)
    for k in range(4):
        rows += _rows(f"m{k}", [1 if (i % 2 == 0 or i < 2 * (k + 8)) else 0 for i in range(200)])
    t = build_eval_table(read_item_results(_write_jsonl(tmp_path / "r.jsonl", rows)))
    raw = [c.comparison.p_value for c in t.comparisons]
    assert all(c.p_holm >= p for c, p in zip(t.comparisons, raw, strict=True))
    assert max(c.p_holm for c in t.comparisons) <= 1.0


def test_an_lm_eval_samples_file_or_a_directory_points_to_the_importer(tmp_path):
    # issue 14: a samples_<task>_*.jsonl stopped at "field 'model' is missing" with no hint
    f = _write_jsonl(
        tmp_path / "samples_gsm8k_2026.jsonl",
        [{"doc_id": 0, "filter": "strict-match", "metrics": ["exact_match"], "exact_match": 1.0}],
    )
    with pytest.raises(InputError, match=r"--log_samples output.*--from lm-eval"):
        read_item_results(f)
    with pytest.raises(InputError, match=r"is a directory.*--from lm-eval"):
        read_item_results(tmp_path)


def test_model_interval_honours_clusters_with_the_design_effect(tmp_path):
    # 10 clusters of 4 items, every item of a cluster scored alike: the 40 rows carry the information of
    # ~10 items. Cluster-robust variance G/(G-1) * sum_g (4 (x_g - p))^2 / n^2 with p = 0.5:
    # 10/9 * 10 * 16 * 0.25 / 1600 = 0.027778; over p(1-p)/n = 0.00625 gives deff = 4.444 (= 4 * 10/9),
    # so the interval is Wilson's on n / deff = 9 items (statsmodels accepts the fractional count 4.5).
    from statsmodels.stats.proportion import proportion_confint

    rows = [
        {"model": m, "item": f"q{i}", "score": int((i // 4) % 2 == 0) if m == "a" else 1, "cluster": f"c{i // 4}"}
        for m in ("a", "b")
        for i in range(40)
    ]
    t = build_eval_table(read_item_results(_write_jsonl(tmp_path / "r.jsonl", rows)))
    a = t.models[0]
    assert (a.model, a.interval, a.n_clusters) == ("a", "wilson-clustered", 10)
    assert a.design_effect == pytest.approx(40 / 9, rel=1e-12)
    lo, hi = proportion_confint(4.5, 9, alpha=0.05, method="wilson")
    assert (a.low, a.high) == pytest.approx((lo, hi), abs=1e-12)
    plain_lo, plain_hi = proportion_confint(20, 40, alpha=0.05, method="wilson")
    assert a.high - a.low > 1.8 * (plain_hi - plain_lo)  # 0.547 vs 0.296: the rows-as-items interval is too narrow
    b = t.models[1]  # every score 1: no spread, the plain Wilson bound at 40/40
    assert b.design_effect == 1.0 and b.high == 1.0


def test_every_item_differing_by_the_same_amount_is_not_no_difference(tmp_path):
    # 2 items, both right for a and wrong for b: -100 points, every paired difference -1; McNemar exact p = 0.5
    f = _write_jsonl(tmp_path / "r.jsonl", _rows("a", [1, 1]) + _rows("b", [0, 0]))
    (row,) = build_eval_table(read_item_results(f)).comparisons
    assert row.comparison.delta == -1.0
    assert "no difference" not in row.verdict
    assert row.verdict == "inconclusive (every item differs by -1; 2 items are too few)"
    # a delta of exactly 0 still says so
    f = _write_jsonl(tmp_path / "s.jsonl", _rows("a", [1, 0, 1]) + _rows("b", [1, 0, 1]))
    assert build_eval_table(read_item_results(f)).comparisons[0].verdict == "inconclusive (no difference observed)"


def test_item_ids_beyond_64_bits_stay_distinct(tmp_path):
    # 2**70 and 2**70 + 1 are one float64 (orjson reads them as floats): kept as exact integers, as strings
    big = 2**70
    rows = [{"model": m, "item": big + i, "score": s} for m, s in (("a", 1), ("b", 0)) for i in range(3)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))  # orjson cannot write them
    r = read_item_results(tmp_path / "r.jsonl")
    assert sorted(r.scores["a"]) == [str(big), str(big + 1), str(big + 2)]


def test_two_score_columns_are_refused_not_last_wins(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("model,item,score,score\na,q1,1,0\nb,q1,0,1\n")
    with pytest.raises(InputError, match=r"names column 'score' twice"):
        read_item_results(f)


def test_two_score_keys_in_one_line_are_refused(tmp_path):
    # issue 21: the last of two "score" keys won silently (json and orjson both keep it)
    p = tmp_path / "r.jsonl"
    p.write_text('{"model": "a", "item": "q1", "score": 1}\n{"model": "b", "item": "q1", "score": 1, "score": 0}\n')
    with pytest.raises(InputError, match=r"key 'score' appears twice in one record") as info:
        read_item_results(p)
    assert info.value.line == 2 and str(info.value.path).endswith("r.jsonl")


def test_two_score_keys_exit_2_from_stats_table_with_file_and_line(tmp_path):
    import subprocess
    import sys

    p = tmp_path / "r.jsonl"
    p.write_text('{"model": "a", "item": "q1", "score": 1, "score": 0}\n{"model": "b", "item": "q1", "score": 1}\n')
    res = subprocess.run(
        [sys.executable, "-m", "expkit", "stats", "table", str(p)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 2
    expected = (
        f"error: {p}:1: key 'score' appears twice in one record (a JSON reader keeps the last one silently); "
        "keep one 'score' per line"
    )
    assert res.stderr.strip() == expected
