"""The public surface other stages import (C2.3, C6.5, C6.6 labs use setup_training + train_step)."""

from __future__ import annotations

import inspect

import expkit.train as train


def test_all_is_sorted_and_every_name_exists():
    assert list(train.__all__) == sorted(train.__all__)
    for name in train.__all__:
        assert hasattr(train, name), name


def test_one_step_api_keeps_its_keywords():
    params = inspect.signature(train.setup_training).parameters
    assert {"model_config", "train_config", "corpus", "seed", "device", "schedule"} <= set(params)
    assert list(inspect.signature(train.train_step).parameters)[:2] == ["setup", "step"]


def test_one_training_step_runs_from_a_fresh_setup(small_corpus):
    from train_fixtures import TINY_MODEL, tiny_train

    sched = train.WarmupCosine(lr_max=1e-3, lr_min=1e-4, warmup_steps=1, max_steps=2)
    setup = train.setup_training(
        model_config=TINY_MODEL, train_config=tiny_train(), corpus=small_corpus, seed=0, device="cpu", schedule=sched
    )
    out = train.train_step(setup, 0)
    assert out.loss.ndim == 0 and float(out.grad_norm) > 0
    assert all(p.grad is None for p in setup.module.parameters())  # cleared with set_to_none=True
