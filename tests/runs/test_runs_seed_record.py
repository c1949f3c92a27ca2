"""The seed record says where the seed came from and who applied it, never more than is known
(issue 25 item 5, issue 21 item 9)."""

from __future__ import annotations

import sys

import orjson

from expkit.runs.execute import ExecRequest, execute
from expkit.runs.records import describe_run, recorded_seed


def _seed_line(view) -> str:
    (line,) = [r.summary for r in view.records if r.record == "seed"]
    return line


def test_a_callback_run_does_not_claim_the_seed_was_handed_to_a_command(monkeypatch):
    monkeypatch.setenv("EXPKIT_SEED", "1")
    rec = recorded_seed(None, deterministic=False, seeded_by="the Hugging Face Trainer (seed=1)")
    assert rec.seed == 1 and rec.source == "EXPKIT_SEED"  # taken from the environment, and said so
    assert rec.not_seeded == {"all": "seeded by the Hugging Face Trainer (seed=1)"}
    assert recorded_seed(7, deterministic=False, seeded_by="x").source == "argument"


def test_runs_exec_says_the_seed_was_handed_over_not_that_it_was_used(tmp_path, monkeypatch):
    monkeypatch.delenv("EXPKIT_SEED", raising=False)
    res = execute(ExecRequest((sys.executable, "-c", "print(1)"), store=tmp_path / "s", seed=3, cwd=tmp_path))
    line = _seed_line(describe_run(res.run_id, store=tmp_path / "s"))
    assert line == "3 (argument; handed to the command as EXPKIT_SEED; whether the command uses it is not known here)"


def test_a_command_that_records_another_seed_is_noted(tmp_path, monkeypatch):
    monkeypatch.delenv("EXPKIT_SEED", raising=False)
    script = tmp_path / "own_seed.py"
    script.write_text("from expkit.runs import start\nwith start(seed=0) as run:\n    run.log(1, loss=1.0)\n")
    res = execute(ExecRequest((sys.executable, str(script)), store=tmp_path / "s", seed=1, cwd=tmp_path))
    rec = orjson.loads((tmp_path / "s" / res.run_id / "run.json").read_bytes())
    assert rec["seed"]["seed"] == 0
    assert "EXPKIT_SEED=1 was handed to the command, which recorded seed 0 itself" in rec["seed"]["note"]
