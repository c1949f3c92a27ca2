"""`expkit compare`: the verdict table, --json, --curves, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from expkit.runs.execute import ExecRequest, execute
from expkit.runs.store import list_runs

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


def _run(store: str, group: str, seed: int, loss: float, **config: object) -> None:
    code = f"import json; print(json.dumps({{'step': 1, 'loss': {loss!r}}}))"
    res = execute(ExecRequest([sys.executable, "-c", code], store=store, group=group, seed=seed, config=config))
    assert res.status == "finished"


def test_two_finished_runs_of_one_config_and_seed_are_refused_and_named(cli, store: Path) -> None:
    """Issue 34 item 1: a trial run twice (a resumed sweep) was counted as two seeds."""
    _run("runs", "lr", 2, 0.5, lr=0.003)  # a second finished run of lr 0.003, seed 2
    r = cli("compare", "lr", "--by", "lr")
    assert r.exit_code == 2
    err = " ".join(r.stderr.split())
    assert 'has 2 finished runs of config {"lr":0.003} seed 2' in err and "one seed run twice, not two seeds" in err
    dup = sorted(x.id for x in list_runs(store, where=["group=lr", "seed=2", "config.lr=0.003"]).runs)
    assert all(rid in err for rid in dup) and len(dup) == 2


def test_seeds_that_differ_only_by_float_jitter_had_no_effect(cli, tmp_path: Path, monkeypatch) -> None:
    """Issue 34 item 4: a script that ignores its seed, with 1e-9 relative jitter (unordered GPU reductions),
    got a "worse" verdict with an interval of zero width; exact equality missed the jitter."""
    monkeypatch.chdir(tmp_path)
    for s in range(4):
        _run("runs", "j", s, 0.7 * (1 + 1e-9 * ((-1) ** s) * (s + 1)), lr=0.1)
        _run("runs", "j", s, 0.9 * (1 + 1e-9 * s), lr=0.2)
    r = cli("compare", "j", "--by", "lr", "--json")
    assert r.exit_code == 0, r.stderr
    (m,) = json.loads(r.stdout)["result"]["metrics"]
    assert m["verdict"] == "no verdict: the seeds had no effect" and not m["judged"]


def test_three_values_of_the_key_are_each_compared_with_the_best_with_holm(cli, tmp_path: Path, monkeypatch) -> None:
    """Issue 34 item 6: `compare --by lr` refused 3 values, so a 3 x 3 sweep had no one-command verdict."""
    from scipy import stats as sps

    from expkit.stats.multiplicity import holm_adjust

    monkeypatch.chdir(tmp_path)
    noise = [0.01, -0.02, 0.015, 0.0, -0.01]
    other = [-0.02, 0.03, 0.0, -0.01, 0.02]  # lr 0.01's own noise: 0.01 above the best on average, sd ~0.035
    means = {0.001: 1.0, 0.003: 0.7, 0.01: 0.705}  # 0.003 best, 0.01 a tie with it, 0.001 worse
    for s, e in enumerate(noise):
        for lr, mu in means.items():
            _run("runs", "g3", s, mu + (other[s] if lr == 0.01 else e), lr=lr)
    r = cli("compare", "g3", "--by", "lr", "--json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["result"]["rows"]
    assert [(x["best"], x["other"]) for x in rows] == [("lr=0.003", "lr=0.001"), ("lr=0.003", "lr=0.01")]
    best = [mu + e for mu, e in zip([0.7] * 5, noise, strict=True)]
    raw = [
        sps.ttest_rel([1.0 + e for e in noise], best).pvalue,
        sps.ttest_rel([0.705 + e for e in other], best).pvalue,
    ]
    assert [x["p_holm"] for x in rows] == pytest.approx(list(holm_adjust(raw)), rel=1e-6)
    assert [x["verdict"] for x in rows] == ["worse than the best", "not told apart from the best"]
    r = cli("compare", "g3", "--by", "lr")
    assert r.exit_code == 0 and "every value against the best" in r.stdout and "Holm" in r.stdout
