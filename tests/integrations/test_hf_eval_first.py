"""``trainer.evaluate()`` before ``trainer.train()`` is recorded at step 0 (issue 37: it was dropped silently,
while docs/runs.md says every logged metric is recorded at its step)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from hftiny import tiny_trainer  # noqa: E402

from expkit.integrations.hf import ExpkitCallback  # noqa: E402

pytestmark = pytest.mark.slow  # a real Trainer: ~10 s on 2 cores


def test_an_evaluation_before_training_lands_at_step_0(tmp_path):
    cb = ExpkitCallback(store=tmp_path / "runs", name="eval-first")
    trainer = tiny_trainer(tmp_path / "out", callbacks=[cb], steps=2, eval_rows=8)
    trainer.evaluate()
    trainer.train()
    lines = [json.loads(x) for x in (cb.run.dir / "metrics.jsonl").read_text().splitlines()]
    first = lines[0]
    assert first["step"] == 0 and "eval_loss" in first  # the evaluation before training, at step 0
    assert [x["step"] for x in lines if "loss" in x] == [1, 2]  # then training, in the same run
    assert json.loads((cb.run.dir / "config.json").read_text())["training_args"]["max_steps"] == 2
