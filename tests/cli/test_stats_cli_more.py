"""``expkit stats power`` and ``expkit stats table`` in-process: exit codes and content."""

from __future__ import annotations

import json

import orjson


def _results(tmp_path, n=200):
    rows = []
    for i in range(n):
        rows.append({"model": "base", "item": f"q{i}", "score": int(i % 10 < 7)})
        rows.append({"model": "new", "item": f"q{i}", "score": int(i % 10 < 8)})
    f = tmp_path / "results.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return f


def test_power_json_has_the_issue_fields(cli):
    r = cli("stats", "power", "--baseline", "0.7", "--delta", "0.05", "--paired-corr", "0.5", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["result"]
    # statsmodels NormalIndPower(ratio=0).solve_power(...) = 624.98 -> 625 (see tests/stats/test_power.py)
    assert data["n_required"] == 625 and data["power"] >= 0.8
    assert abs(data["mde"] - 0.05) < 1e-3


def test_power_text_at_the_seeds_80_items(cli):
    r = cli("stats", "power", "--baseline", "0.7", "--delta", "0.05", "--n", "80")
    assert r.exit_code == 0
    assert "items per model for 80% power: 1,248" in r.stdout and "power at n = 80: 10.9%" in r.stdout


def test_power_bad_value_exits_2(cli):
    r = cli("stats", "power", "--baseline", "0.7", "--delta", "0.5")
    assert r.exit_code == 2 and "baseline + delta=1.2" in r.stderr


def test_table_terminal_markdown_html_json(cli, tmp_path):
    f = _results(tmp_path)
    r = cli("stats", "table", str(f))
    assert r.exit_code == 0, r.stderr
    assert "base (baseline)" in r.stdout and "better" in r.stdout and "mcnemar" in r.stdout
    md = cli("stats", "table", str(f), "--format", "markdown")
    assert md.exit_code == 0 and "| new | 200 | 80.0 |" in md.stdout
    html = cli("stats", "table", str(f), "--format", "html", "--baseline", "new")
    assert html.exit_code == 0 and "<table>" in html.stdout and "<code>new</code>" in html.stdout
    # a standalone, styled page (issue 37): it opens as it is in a browser
    assert (
        html.stdout.startswith("<!doctype html>")
        and "<style>" in html.stdout
        and html.stdout.rstrip().endswith("</html>")
    )
    js = cli("stats", "table", str(f), "--json")
    data = json.loads(js.stdout)["result"]
    (comp,) = data["comparisons"]
    assert comp["comparison"]["delta"] == 0.1 and comp["comparison"]["b_only"] == 0


def test_table_bad_inputs(cli, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = cli("stats", "table", str(empty))
    assert r.exit_code == 2 and "no result rows" in r.stderr
    dup = tmp_path / "dup.csv"
    dup.write_text("model,item,score\na,q1,1\na,q1,0\n")
    r = cli("stats", "table", str(dup))
    assert r.exit_code == 2 and "dup.csv:3: model 'a' item 'q1' appears twice" in r.stderr
    r = cli("stats", "table", str(_results(tmp_path)), "--format", "pdf")
    assert r.exit_code == 2 and "--format 'pdf'" in r.stderr
