"""The run API and the store: the seven records, status that never lies, faults."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from expkit.errors import UsageError
from expkit.runs import list_runs, start
from expkit.runs.store import find_run_dir, read_run

PY = sys.executable


@dataclasses.dataclass
class Cfg:
    lr: float = 1e-3
    layers: tuple[int, ...] = (4, 4)


def test_start_writes_the_seven_records(tmp_path: Path) -> None:
    data = tmp_path / "train.txt"
    data.write_text("hello\n" * 100)
    with start(config=Cfg(), data=[data, "hf://org/set@abc123"], seed=7, store=tmp_path / "s", name="first") as run:
        run.log(1, loss=2.0)
        run.log(2, loss=1.5, acc=0.25)
    rec = read_run(run.dir)
    assert rec["status"] == "finished"
    assert rec["config"] == {"lr": 1e-3, "layers": [4, 4]}
    assert json.loads((run.dir / "config.json").read_text()) == rec["config"]
    assert rec["data"][0]["size_bytes"] == 600 and rec["data"][0]["hash_scheme"] == "full"
    assert rec["data"][1]["hf_name"] == "org/set" and rec["data"][1]["revision"] == "abc123"
    assert rec["seed"]["seed"] == 7 and rec["seed"]["source"] == "argument" and "torch" in rec["seed"]["seeded"]
    env = rec["environment"]
    assert env["packages"]["torch"] == env["torch"] and "orjson" in env["packages"]
    assert rec["hardware"]["cpu_cores_logical"] == os.cpu_count() and rec["hardware"]["ram_bytes"] > 0
    # code: we run inside the expkit checkout (a git work tree), so a commit is recorded
    code = rec["code"]
    assert len(code["commit"]) == 40 if code["commit"] else "git work tree" in code["reason"]
    lines = [json.loads(line) for line in (run.dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2] and lines[1]["acc"] == 0.25
    assert rec["final_metrics"]["loss"] == 1.5


def test_seed_taken_from_environment_and_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    monkeypatch.setenv("EXPKIT_SEED", "11")
    with start(store=tmp_path) as run:
        first = random.random()
    assert read_run(run.dir)["seed"]["source"] == "EXPKIT_SEED"
    with start(seed=5, store=tmp_path) as run2:
        pass
    seed = read_run(run2.dir)["seed"]
    assert seed["seed"] == 5 and "EXPKIT_SEED=11" in seed["note"]
    random.seed(11)
    assert random.random() == first


def test_non_json_config_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"'optim\.device' holds a PosixPath"):
        start(config={"lr": 1, "optim": {"device": Path("/x")}}, store=tmp_path)
    with pytest.raises(UsageError, match=r"'betas\[1\]' is nan"):
        start(config={"betas": [0.9, float("nan")]}, store=tmp_path)
    assert not any(p.is_dir() for p in tmp_path.iterdir()) if tmp_path.exists() else True


@pytest.mark.parametrize("bad", ["../x", "a/b", "..", "", "x" * 200])
def test_names_cannot_escape_the_store(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UsageError, match="not allowed"):
        start(store=tmp_path, name=bad)
    with pytest.raises(UsageError, match="not allowed"):
        find_run_dir(tmp_path, bad)


def test_exception_marks_failed_with_traceback(tmp_path: Path) -> None:
    with pytest.raises(ZeroDivisionError), start(store=tmp_path) as run:
        run.log(0, loss=1.0)
        _ = 1 / 0
    rec = read_run(run.dir)
    assert rec["status"] == "failed" and "ZeroDivisionError" in rec["error"]
    assert list_runs(tmp_path).runs[0].status == "failed"


def test_metric_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    import torch

    with start(store=tmp_path) as run:
        run.log(1, loss=torch.tensor(0.5), nan=float("nan"))
        with pytest.raises(UsageError, match="metric 'note'"):
            run.log(2, note="hello")
    line = json.loads((run.dir / "metrics.jsonl").read_text().splitlines()[0])
    assert line["loss"] == 0.5 and line["nan"] == "nan"


def test_checkpoint_round_trip_weights_only(tmp_path: Path) -> None:
    import torch

    from expkit.runs.checkpoint import capture_rng_state, load_checkpoint, restore_rng_state

    net = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(net.parameters())
    net(torch.randn(4, 3)).sum().backward()
    opt.step()
    with start(store=tmp_path, seed=0) as run:
        path = run.save_checkpoint(
            {"model": net.state_dict(), "optim": opt.state_dict(), "rng": capture_rng_state(), "step": 3}, "step3"
        )
    assert path == run.dir / "checkpoints" / "step3"
    assert sorted(f.name for f in path.iterdir()) == ["manifest.json", "state.pt", "tensors.safetensors"]
    state = load_checkpoint(path)
    torch.testing.assert_close(state["model"]["weight"], net.weight.detach(), rtol=0, atol=0)
    assert state["step"] == 3 and state["optim"]["state"][0]["step"] == opt.state_dict()["state"][0]["step"]
    restore_rng_state(state["rng"])
    a = torch.rand(3)
    restore_rng_state(state["rng"])
    assert torch.equal(a, torch.rand(3))
    entry = read_run(run.dir)["checkpoints"][0]
    assert entry["name"] == "step3" and "step3/tensors.safetensors" in entry["files"]


def test_artifact_is_copied_and_hashed(tmp_path: Path) -> None:
    src = tmp_path / "preds.csv"
    src.write_text("a,b\n1,2\n")
    with start(store=tmp_path / "s") as run:
        dest = run.artifact(src)
    assert dest.read_text() == "a,b\n1,2\n"
    art = read_run(run.dir)["artifacts"][0]
    assert art["size_bytes"] == 8 and len(art["sha256"]) == 64


_SCRIPT = textwrap.dedent("""
    import sys, time
    from expkit.runs import start
    run = start(config={{"k": 1}}, store={store!r}, seed=1)
    print(run.id, flush=True)
    for step in range({steps}):
        run.log(step, loss=1.0 / (step + 1))
        time.sleep({sleep})
    {tail}
""")


def _spawn(tmp_path: Path, steps: int, sleep: float, tail: str = "run.finish()") -> subprocess.Popen[str]:
    script = tmp_path / f"train_{time.monotonic_ns()}.py"
    script.write_text(_SCRIPT.format(store=str(tmp_path / "s"), steps=steps, sleep=sleep, tail=tail))
    return subprocess.Popen([PY, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_metrics(run_dir: Path, lines: int, timeout: float = 120.0) -> None:
    """Until ``lines`` metrics lines are on disk (flushed every FLUSH_INTERVAL_S): a fixed sleep was too short
    on a loaded machine and too long on an idle one."""
    deadline = time.monotonic() + timeout
    metrics = run_dir / "metrics.jsonl"
    while not (metrics.exists() and metrics.read_bytes().count(b"\n") >= lines):
        assert time.monotonic() < deadline, f"fewer than {lines} metrics lines in {timeout:.0f} s"
        time.sleep(0.05)


def test_sigkill_shows_lost_and_keeps_flushed_metrics(tmp_path: Path) -> None:
    proc = _spawn(tmp_path, steps=10_000, sleep=0.01)
    run_id = proc.stdout.readline().strip()
    _wait_for_metrics(tmp_path / "s" / run_id, 60)  # mid-run, several flushes in
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    listing = list_runs(tmp_path / "s")
    (row,) = listing.runs
    assert row.id == run_id and row.status == "lost" and "gone without closing" in row.status_reason
    lines = (tmp_path / "s" / run_id / "metrics.jsonl").read_text().splitlines()
    steps = [json.loads(line)["step"] for line in lines]
    assert len(steps) >= 50 and steps == list(range(len(steps)))  # intact up to the last flush
    assert read_run(tmp_path / "s" / run_id)["status"] == "lost"  # written back, not only shown


def test_sigterm_marks_killed(tmp_path: Path) -> None:
    proc = _spawn(tmp_path, steps=10_000, sleep=0.01)
    run_id = proc.stdout.readline().strip()
    _wait_for_metrics(tmp_path / "s" / run_id, 1)  # in the training loop
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    rec = read_run(tmp_path / "s" / run_id)
    assert rec["status"] == "killed" and rec["signal"] == "SIGTERM"


def test_uncaught_exception_without_with_block_is_failed(tmp_path: Path) -> None:
    proc = _spawn(tmp_path, steps=2, sleep=0, tail="raise ValueError('boom')")
    run_id = proc.stdout.readline().strip()
    proc.wait(timeout=30)
    rec = read_run(tmp_path / "s" / run_id)
    assert rec["status"] == "failed" and "ValueError: boom" in rec["error"]


def test_eight_processes_at_once(tmp_path: Path) -> None:
    procs = [_spawn(tmp_path, steps=20, sleep=0.001) for _ in range(8)]
    ids = [p.stdout.readline().strip() for p in procs]
    for p in procs:
        assert p.wait(timeout=60) == 0, p.stderr.read()
    listing = list_runs(tmp_path / "s")
    assert sorted(r.id for r in listing.runs) == sorted(ids) and len(set(ids)) == 8
    assert {r.status for r in listing.runs} == {"finished"} and listing.broken == ()
    for rid in ids:
        assert len((tmp_path / "s" / rid / "metrics.jsonl").read_text().splitlines()) == 20
    import sqlite3

    con = sqlite3.connect(tmp_path / "s" / "index.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 8


def test_corrupted_run_json_is_named_and_the_rest_listed(tmp_path: Path) -> None:
    runs = []
    for i in range(3):
        with start(store=tmp_path, name=f"r{i}") as run:
            run.log(0, loss=float(i))
        runs.append(run)
    (runs[1].dir / "run.json").write_text('{"id": "trunc')
    listing = list_runs(tmp_path)
    assert sorted(r.name for r in listing.runs) == ["r0", "r2"]
    (broken,) = listing.broken
    assert broken.id == runs[1].id and "not valid JSON" in broken.error


def test_where_filters_on_config_and_metrics(tmp_path: Path) -> None:
    for lr in (0.1, 0.01):
        with start(config={"lr": lr, "opt": {"name": "adam"}}, store=tmp_path, name=f"lr{lr}") as run:
            run.log(1, loss=lr * 10)
    assert [r.name for r in list_runs(tmp_path, where=["config.lr=0.01"]).runs] == ["lr0.01"]
    assert [r.name for r in list_runs(tmp_path, where=["metric.loss>0.5"]).runs] == ["lr0.1"]
    assert len(list_runs(tmp_path, where=["config.opt.name=adam", "status=finished"]).runs) == 2
    with pytest.raises(UsageError, match="unknown"):
        list_runs(tmp_path, where=["colour=red"])
