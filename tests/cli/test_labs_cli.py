"""`expkit labs list|run` in-process."""

from __future__ import annotations

import json


def test_list_shows_c2_2(cli):
    res = cli("labs", "list", "--json")
    assert res.exit_code == 0
    ids = [lab["id"] for lab in json.loads(res.stdout)["result"]]
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


def test_run_device_cuda_refuses_without_cuda(cli, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # this test is about the refusal
    res = cli("labs", "run", "C2.2", "--quick", "--device", "cuda", "--out", str(tmp_path / "rep"), "--json")
    assert res.exit_code == 2
    err = json.loads(res.stdout)["error"]
    assert err["kind"] == "UsageError" and "no CUDA GPU" in err["message"]
    assert not (tmp_path / "rep").exists()  # refused before any lab ran


def test_run_unknown_device_exits_2(cli, tmp_path):
    res = cli("labs", "run", "C2.2", "--quick", "--device", "tpu", "--out", str(tmp_path / "rep"))
    assert res.exit_code == 2
    assert "'tpu'" in res.stderr and "cpu, cuda" in res.stderr


def test_run_records_the_device(cli, tmp_path):
    res = cli("labs", "run", "C2.2", "--quick", "--device", "cpu", "--out", str(tmp_path / "rep"), "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["result"]["device"] == "cpu"
