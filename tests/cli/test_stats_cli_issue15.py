"""Issue 15 regressions in ``expkit stats`` and ``expkit plot curves``: each defect seen is a named test."""

from __future__ import annotations

import json

import pytest


def _table(cli, path, *extra):
    return cli("stats", "table", str(path), *extra)


def test_power_with_a_tiny_delta_answers_at_once(cli):
    # was: the sample-size search stepped one item at a time from ~3e14 and never returned
    from timebound import assert_within, timed

    _, reference = timed(lambda: cli("stats", "power", "--baseline", "0.7", "--delta", "0.05", "--json"))
    res, seconds = timed(lambda: cli("stats", "power", "--baseline", "0.7", "--delta", "1e-7", "--json"))
    assert_within(seconds, reference, factor=20.0, floor_s=5.0)
    assert res.exit_code == 0, res.stderr
    a = json.loads(res.stdout)["result"]
    # closed form ((1.959964 + 0.841621) * sqrt(.21 + .7*.3) / 1e-7)^2 = 3.2965e14 (the far tail is negligible)
    assert a["n_required"] == pytest.approx(3.2965e14, rel=1e-4)
    assert a["power"] >= 0.8


def test_power_refuses_an_impossible_negative_correlation_with_the_feasible_range(cli):
    # was: --paired-corr -1 accepted although 0/1 scores at 0.7 and 0.75 correlate at least -0.378
    res = cli("stats", "power", "--baseline", "0.7", "--delta", "0.05", "--paired-corr", "-1")
    assert res.exit_code == 2
    assert "feasible range is [-0.378, 0.882]" in res.stderr and "Traceback" not in res.stderr


def test_power_at_or_below_alpha_is_refused(cli):
    # was: --power 0.01 printed a minimum detectable effect of 0.00 points
    res = cli("stats", "power", "--baseline", "0.7", "--delta", "0.05", "--power", "0.01", "--json")
    assert res.exit_code == 2
    err = json.loads(res.stdout)["error"]
    assert err["kind"] == "UsageError" and "power=0.01 is not above alpha=0.05" in err["message"]


def test_table_with_scores_near_1e308_is_refused_not_inf(cli, tmp_path):
    # was: the table printed inf and nan
    f = tmp_path / "big.jsonl"
    f.write_text(
        "".join(
            json.dumps({"model": m, "item": i, "score": s}) + "\n"
            for m, i, s in (("a", "1", 1e308), ("a", "2", -1e308), ("b", "1", -1e308), ("b", "2", 1e308))
        )
    )
    res = _table(cli, f)
    assert res.exit_code == 2
    assert "score 1e+308 (model 'a', item '1') is too large" in res.stderr
    assert "inf" not in res.stdout and "Traceback" not in res.stderr


def test_table_reads_an_excel_csv_with_a_bom(cli, tmp_path):
    # was: the BOM stuck to the first column name and 'model' was reported missing
    f = tmp_path / "excel.csv"
    f.write_bytes(b"\xef\xbb\xbfmodel,item,score\r\na,1,1\r\nb,1,0\r\na,2,1\r\nb,2,1\r\n")
    res = _table(cli, f, "--json")
    assert res.exit_code == 0, res.stderr
    models = json.loads(res.stdout)["result"]["models"]
    assert [(m["model"], m["n"], m["score"]) for m in models] == [("a", 2, 1.0), ("b", 2, 0.5)]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_table_non_utf8_file_names_the_line(cli, tmp_path, suffix):
    # was: UnicodeDecodeError traceback (CSV)
    f = tmp_path / f"latin1{suffix}"
    if suffix == ".csv":
        f.write_bytes("model,item,score,note\na,1,1,ok\nb,1,0,caf\u00e9\n".encode("latin-1"))
    else:
        f.write_bytes(
            (
                '{"model": "a", "item": "1", "score": 1}\n{"model": "b", "item": "1", "score": 0, "n": "caf\u00e9"}\n'
            ).encode("latin-1")
        )
    res = _table(cli, f)
    assert res.exit_code == 2
    assert f"latin1{suffix}:" in res.stderr and ("not UTF-8" in res.stderr or "invalid UTF-8" in res.stderr)
    line = res.stderr.split(f"latin1{suffix}:")[1].split(":")[0]
    assert line == ("3" if suffix == ".csv" else "2")
    assert "Traceback" not in res.stderr


def test_plot_curves_non_utf8_csv_is_exit_2(cli, tmp_path):
    f = tmp_path / "curves.csv"
    f.write_bytes("step,loss,note\n1,2.0,ok\n2,1.5,caf\u00e9\n".encode("latin-1"))
    res = cli("plot", "curves", str(f), "--out", str(tmp_path / "c.png"))
    assert res.exit_code == 2
    assert "curves.csv:3:" in res.stderr and "not UTF-8" in res.stderr


def test_plot_curves_groups_sharing_seeds_do_not_merge_and_duplicates_are_refused(cli, tmp_path):
    f = tmp_path / "long.csv"
    rows = ["group,seed,step,loss"]
    for g, base in (("a", 1.0), ("b", 2.0)):
        for seed in (0, 1):
            rows += [f"{g},{seed},{step},{base + seed / 10 + 1 / step}" for step in (1, 2, 4, 8)]
    f.write_text("\n".join(rows) + "\n")
    res = cli("plot", "curves", str(f), "--out", str(tmp_path / "c.png"), "--json")
    assert res.exit_code == 0, res.stderr
    groups = json.loads(res.stdout)["result"]["groups"]
    assert [(g["group"], g["n_seeds"]) for g in groups] == [("a", 2), ("b", 2)]
    f.write_text("\n".join([*rows, "b,1,8,0.5"]) + "\n")
    res = cli("plot", "curves", str(f), "--out", str(tmp_path / "c.png"))
    assert res.exit_code == 2
    assert "long.csv:18:" in res.stderr and "twice (first on line 17)" in res.stderr


@pytest.mark.parametrize("delta", ["1e-9", "-1e-300", "1e-320"])
def test_power_with_an_unmeasurably_small_delta_is_a_usage_error(cli, delta):
    # 1e-300 squared overflowed (OverflowError, exit 3) before the bound was checked
    res = cli("stats", "power", "--baseline", "0.7", "--delta", delta)
    assert res.exit_code == 2, res.stderr
    assert "a gap this small cannot be measured" in res.stderr and "Traceback" not in res.stderr
