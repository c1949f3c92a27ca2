"""`expkit stats leaderboard` in-process: the JSON fields the issue lists, the text formats, the plot, and
bad input as one line with exit 2 (an empty file, no records, a missing field, two files with one name)."""

from __future__ import annotations

import json

import pytest

MODEL_FIELDS = {
    "name", "n", "skipped", "unparsed", "score", "ci_low", "ci_high", "rank", "rank_best", "rank_worst",
    "rank_upper_bound", "tier",
}  # fmt: skip
PAIR_FIELDS = {"a", "b", "n_common", "delta", "p", "p_adjusted", "distinguishable"}


def _mmlu(path, right, nulls, n=40, extra=()):
    """n MMLU-Pro records: the first ``right`` answered correctly, the next ``nulls`` with pred null."""
    recs = [
        {
            "question_id": i,
            "category": "c" + str(i % 3),
            "answer": "A",
            "pred": "A" if i < right else None if i < right + nulls else "B",
        }
        for i in range(n)
    ]
    path.write_text(json.dumps([*recs, *extra]))
    return str(path)


@pytest.fixture
def three(tmp_path):
    return [
        _mmlu(tmp_path / "strong.json", 36, 0),
        _mmlu(tmp_path / "middle.json", 20, 12, extra=("not a record",)),
        _mmlu(tmp_path / "weak.json", 8, 0),
    ]


def test_json_has_the_listed_fields(cli, three):
    res = cli("stats", "leaderboard", *three, "--boot", "100", "--json")
    assert res.exit_code == 0, res.stderr
    r = json.loads(res.stdout)["result"]
    assert [m["name"] for m in r["models"]] == ["strong", "middle", "weak"]
    assert all(set(m) >= MODEL_FIELDS for m in r["models"]) and all(set(p) >= PAIR_FIELDS for p in r["pairs"])
    middle = r["models"][1]
    assert (middle["n"], middle["skipped"], middle["unparsed"], middle["score"]) == (40, 1, 12, 0.5)
    assert len(r["pairs"]) == 3 and "order_changes" in r and r["published"] == []
    # middle under drop 20/28 = 0.71 and chance:2 (two answers seen) 26/40 = 0.65: still between the others
    assert r["order_changes"] == []


def test_order_changes_and_published(cli, tmp_path):
    a = _mmlu(tmp_path / "a.json", 20, 0)
    b = _mmlu(tmp_path / "b.json", 16, 10)  # wrong 0.40 < 0.50; drop 16/30 = 0.53 > 0.50
    pub = tmp_path / "pub.csv"
    pub.write_text("model,score\na,50\nb,70\n")
    res = cli("stats", "leaderboard", a, b, "--boot", "50", "--published", str(pub), "--json")
    assert res.exit_code == 0, res.stderr
    r = json.loads(res.stdout)["result"]
    assert {(c["a"], c["b"], c["policy"]) for c in r["order_changes"]} == {("a", "b", "drop")}
    within = {p["model"]: p["within_ci"] for p in r["published"]}
    assert within == {"a": True, "b": False}


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "html"])
def test_text_formats(cli, three, fmt):
    res = cli("stats", "leaderboard", *three, "--boot", "50", "--format", fmt)
    assert res.exit_code == 0, res.stderr
    assert "strong" in res.stdout and "pairs distinguishable" in res.stdout
    assert "middle: 1 entries" in res.stdout
    if fmt == "markdown":
        assert "| rank | model | score |" in res.stdout
    if fmt == "html":
        assert "<table><tr><th>rank</th>" in res.stdout


def test_labels_field_mapping_cluster_and_plot(cli, tmp_path):
    p, q = tmp_path / "p.jsonl", tmp_path / "q.jsonl"
    p.write_text(
        "\n".join(json.dumps({"id": i, "y": "A", "out": "A" if i % 4 else "B", "g": i // 5}) for i in range(40))
    )
    q.write_text(
        "\n".join(json.dumps({"id": i, "y": "A", "out": "A" if i % 2 else None, "g": i // 5}) for i in range(40))
    )
    png = tmp_path / "forest.png"
    args = ["-l", f"P={p}", "-l", f"Q={q}", "--item", "id", "--pred", "out", "--answer", "y", "--cluster", "g"]
    res = cli("stats", "leaderboard", *args, "--unparsed", "chance:4", "--plot", str(png), "--boot", "50", "--json")
    assert res.exit_code == 0, res.stderr
    r = json.loads(res.stdout)["result"]
    assert r["clustered"] and r["policy"] == "chance:4"
    assert {m["name"]: m["score"] for m in r["models"]} == {"P": 0.75, "Q": pytest.approx(0.5 + 20 * 0.25 / 40)}
    assert png.stat().st_size > 1000


def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, three):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    strings = tmp_path / "strings.json"
    strings.write_text(json.dumps(["a", "b"]))
    nofield = tmp_path / "nofield.jsonl"
    nofield.write_text(json.dumps({"id": 1, "ok": 1}))
    (tmp_path / "sub").mkdir()
    same = _mmlu(tmp_path / "sub" / "strong.json", 1, 0)
    cases = [
        ((str(empty), three[0]), "the file is empty"),
        ((str(strings), three[0], "--item", "id", "--score", "ok"), "no records"),
        ((str(nofield), three[0], "--item", "id", "--score", "correct"), "field 'correct' is missing"),
        ((three[0], same), "two models are named 'strong'"),
        ((three[0], three[1], "--unparsed", "maybe"), "--unparsed 'maybe'"),
        ((three[0], three[1], "--adjust", "sidak"), "--adjust 'sidak'"),
        ((three[0], "--score", "x"), "need --item"),
        ((three[0],), "at least two"),
        ((str(tmp_path / "missing.json"), three[0]), "no such file"),
    ]
    for args, needle in cases:
        res = cli("stats", "leaderboard", *args)
        assert res.exit_code == 2, (args, res.stdout, res.stderr)
        assert needle in res.stderr, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_help_has_an_example(cli):
    res = cli("stats", "leaderboard", "--help")
    assert res.exit_code == 0 and "expkit stats leaderboard" in res.stdout and "--unparsed" in res.stdout
