"""Tiny configs for the training tests (a module with a unique name: ``from conftest import`` picks
whichever conftest was imported first when several test folders are collected)."""

from __future__ import annotations

from expkit.train import CharLMConfig, TrainConfig

TINY_MODEL = CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32)


def tiny_train(**kw) -> TrainConfig:
    base = dict(
        batch_size=4, seq_len=32, warmup_steps=2, max_steps=6, eval_windows=8, log_interval=1, eval_interval=1000
    )
    base.update(kw)
    return TrainConfig(**base)
