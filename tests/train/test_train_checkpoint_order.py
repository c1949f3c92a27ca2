"""Step checkpoints are ordered by their step number, not their zero-padded names (which stop sorting by step
past step 9,999,999): keep=2 must delete the oldest, and a run's folder resumes from the newest."""

from __future__ import annotations

import torch

from expkit.train.checkpoint import open_train_checkpoint, save_train_checkpoint


def test_keep_and_resume_follow_the_step_number_past_seven_digits(tmp_path):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    for step in (9_999_998, 9_999_999, 10_000_000):
        save_train_checkpoint(tmp_path, model=model, optimizer=opt, step=step, model_config={}, train_config={}, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "step-10000000",
        "step-9999999",
    ]
    assert open_train_checkpoint(tmp_path).step == 10_000_000
