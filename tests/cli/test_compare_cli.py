"""`expkit compare`: the verdict table, --json, --curves, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from expkit.runs.execute import ExecRequest, execute

A = [1.0, 1.2, 0.9, 1.1, 1.0]
B = [0.72, 0.88, 0.61, 0.79, 0.70]  # A - 0.3 with per-seed noise: B is better on loss


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EXPKIT_STORE", raising=False)
    for s, (a, b) in enumerate(zip(A, B, strict=True)):
        for lr, loss in ((0.001, a), (0.003, b)):
            code = (
                f"import json; print(json.dumps({{'step': 1, 'loss': {loss + 0.5!r}}})); "
                f"print(json.dumps({{'step': 2, 'loss': {loss!r}}}))"
            )
            execute(ExecRequest([sys.executable, "-c", code], store="runs", group="lr", seed=s, config={"lr": lr}))
    return tmp_path / "runs"


def test_compare_by_key_prints_verdict_and_interval(cli, store: Path) -> None:
    r = cli("compare", "lr", "--by", "lr")
    assert r.exit_code == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "B = lr=0.003 (5 runs) vs A = lr=0.001 (5 runs)" in out
    assert "better" in out and "paired by seed" in out and "-0.3 [" in out
    assert "lower is better" in out


def test_compare_json_and_curves(cli, store: Path, tmp_path: Path) -> None:
    r = cli("compare", "lr", "--by", "lr", "--json", "--curves", str(tmp_path / "c.png"), "--higher-is-better")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)["result"]
    (m,) = res["metrics"]
    assert m["metric"] == "loss" and m["method"] == "paired" and m["verdict"] == "worse"  # higher is better now
    assert m["low"] < m["delta"] < m["high"] < 0
    assert (tmp_path / "c.png").stat().st_size > 1000 and res["curves"].endswith("c.png")


def test_compare_errors_exit_2(cli, store: Path) -> None:
    r = cli("compare", "lr")
    assert r.exit_code == 2 and "compare two groups" in r.stderr
    r = cli("compare", "lr", "--by", "lr", "--metric", "acc")
    assert r.exit_code == 2 and "'acc' is not a final metric" in r.stderr
    r = cli("compare", "lr", "--by", "lr", "--curves", "x.pdf")
    assert r.exit_code == 2 and "--curves x.pdf" in r.stderr
    r = cli("compare", "lr", "--by", "lr", "--json", "--metric", "acc")
    assert json.loads(r.stdout)["error"]["kind"] == "UsageError"
