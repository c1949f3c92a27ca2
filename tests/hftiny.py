"""A tiny GPT-2 under a real Hugging Face ``Trainer`` on the CPU, for the tests that need a Trainer run (the
callback's record, the web view): built here, nothing downloaded. Imported by name: pytest puts tests/ on
sys.path for its conftest."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tiny_trainer(
    out_dir: Path, *, callbacks: list[Any], steps: int = 4, lr: float = 5e-5, eval_rows: int = 0, **args: Any
) -> Any:
    """A ``Trainer`` of a 1-layer GPT-2 (vocab 64, width 16) on 16 random rows of 8 tokens (torch seed 0), logging
    every step; ``eval_rows`` of them as the eval set; ``args`` go to ``TrainingArguments`` (save_steps ...)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2, id2label={0: "NEG", 1: "POS"})
    rows = [{"input_ids": r, "labels": r} for r in torch.randint(0, 64, (16, 8))]
    settings: dict[str, Any] = {
        "output_dir": str(out_dir),
        "max_steps": steps,
        "per_device_train_batch_size": 4,
        "per_device_eval_batch_size": 4,
        "learning_rate": lr,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }
    return Trainer(
        model=GPT2LMHeadModel(cfg),  # int id2label keys, as real configs have
        args=TrainingArguments(**{**settings, **args}),
        train_dataset=rows,
        eval_dataset=rows[:eval_rows] if eval_rows else None,
        callbacks=callbacks,
    )
