"""Scores keep their scale (issue 21 item 4): proportions as points, anything else in its own units."""

from __future__ import annotations

import orjson

from expkit.render.eval_table import eval_table_rows, render_eval_table_markdown
from expkit.stats.tables import build_eval_table, read_item_results


def _table(tmp_path, a, b):
    rows = [{"model": m, "item": f"q{i}", "score": s} for m, xs in (("a", a), ("b", b)) for i, s in enumerate(xs)]
    f = tmp_path / "r.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return build_eval_table(read_item_results(f))


def test_a_judge_rating_on_0_to_10_is_shown_as_it_is(tmp_path):
    a = [6, 7, 5, 6, 8, 6, 7, 5, 6, 5]  # mean 6.1
    b = [5, 6, 5, 5, 7, 5, 6, 4, 5, 5]  # mean 5.3
    t = _table(tmp_path, a, b)
    assert not t.proportion and t.unit == "score units"
    rows = {r[0]: r for r in eval_table_rows(t)}
    assert rows["a (baseline)"][2] == "6.1"  # not "610.0"
    assert rows["b"][2] == "5.3" and rows["b"][4] == "-0.8"
    md = render_eval_table_markdown(t)
    assert "in score units" in md and "own units" in md


def test_fractional_scores_in_0_1_stay_points(tmp_path):
    t = _table(tmp_path, [0.5, 0.75, 1.0, 0.25], [0.5, 0.5, 1.0, 0.0])
    assert t.proportion
    rows = {r[0]: r for r in eval_table_rows(t)}
    assert rows["a (baseline)"][2] == "62.5"
