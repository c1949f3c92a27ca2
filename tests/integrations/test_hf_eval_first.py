"""``trainer.evaluate()`` before ``trainer.train()`` is recorded at step 0 (issue 37: it was dropped silently,
while docs/runs.md says every logged metric is recorded at its step)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from expkit.integrations.hf import ExpkitCallback  # noqa: E402

pytestmark = pytest.mark.slow  # a real Trainer: ~10 s on 2 cores


def test_an_evaluation_before_training_lands_at_step_0(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2))
    data = [{"input_ids": row, "labels": row} for row in torch.randint(0, 64, (8, 8))]
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    cb = ExpkitCallback(store=tmp_path / "runs", name="eval-first")
    trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=data, callbacks=[cb])
    trainer.evaluate()
    trainer.train()
    lines = [json.loads(x) for x in (cb.run.dir / "metrics.jsonl").read_text().splitlines()]
    first = lines[0]
    assert first["step"] == 0 and "eval_loss" in first  # the evaluation before training, at step 0
    assert [x["step"] for x in lines if "loss" in x] == [1, 2]  # then training, in the same run
    assert json.loads((cb.run.dir / "config.json").read_text())["training_args"]["max_steps"] == 2
