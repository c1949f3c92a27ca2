"""`expkit labs list|run` in-process."""

from __future__ import annotations

import json


def test_list_shows_c2_2(cli):
    res = cli("labs", "list", "--json")
    assert res.exit_code == 0
    ids = [l["id"] for l in json.loads(res.stdout)["result"]]
    assert "C2.2" in ids


def test_run_unknown_lab_exits_2_listing_known(cli, tmp_path):
    res = cli("labs", "run", "NO_SUCH_LAB", "--out", str(tmp_path))
    assert res.exit_code == 2
    assert "NO_SUCH_LAB" in res.stderr and "C2.2" in res.stderr
    assert not (tmp_path / "index.html").exists()


def test_run_one_lab_writes_report(cli, tmp_path):
    res = cli("labs", "run", "C2.2", "--quick", "--out", str(tmp_path / "rep"), "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)["result"]
    (r,) = data["results"]
    assert r["id"] == "C2.2" and r["status"] == "ok"
    hw = next(m for m in r["measurements"] if m["key"] == "half_width_n80")
    assert round(hw["value"], 2) == 10.96
    assert json.loads((tmp_path / "rep" / "results.json").read_text())["results"][0]["id"] == "C2.2"
    assert "[1/1] labs: C2.2" in res.stderr  # plain progress lines in a pipe
