"""OOM attribution by phase (C4.6) and remedies ranked by predicted savings."""

from __future__ import annotations

import pytest

from expkit.errors import UsageError
from expkit.memory import attribute_oom, estimate_training_memory
from expkit.memory.ledger import TrainingQuery
from expkit.models.description import load_model_description

GIB = 2**30


def test_weights_overflow_at_loading():
    led = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-72b"), seq=1024))
    ex = attribute_oom(led, model="qwen2.5-72b", phase="loading", capacity_bytes=80 * GIB)
    assert ex.block == "weights" and ex.overflow_phase == "loading" and ex.consistent is True
    assert ex.block_bytes == led.bytes_of("fp32 master weights", "bf16 weights")


def test_optimizer_state_overflow_at_first_step():
    # 1.5B full fine-tune, short sequences: weights + activations fit 40 GB; + grads + Adam state do not
    led = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-1.5b"), seq=128))
    totals = attribute_oom(led, model="qwen2.5-1.5b", phase=None).cumulative_bytes
    cap = (totals["backward"] + totals["optimizer step"]) // 2
    assert totals["backward"] < cap < totals["optimizer step"]
    ex = attribute_oom(led, model="qwen2.5-1.5b", phase="optimizer step", capacity_bytes=cap)
    assert ex.block == "optimizer state" and ex.consistent is True
    assert ex.remedies[0].savings_bytes >= ex.remedies[-1].savings_bytes


def test_activations_overflow_with_lora_and_checkpointing_is_a_top_remedy():
    led = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-7b"), method="lora", seq=16384))
    ex = attribute_oom(led, model="qwen2.5-7b", phase="forward", capacity_bytes=24 * 10**9)
    assert ex.block == "activations" and ex.overflow_phase == "forward"
    names = [r.name for r in ex.remedies]
    assert "gradient checkpointing" in names[:2]
    assert "LoRA" not in names  # already LoRA
    savings = [r.savings_bytes for r in ex.remedies]
    assert savings == sorted(savings, reverse=True)


def test_no_overflow_points_at_fragmentation():
    led = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-0.5b"), method="lora", seq=512))
    ex = attribute_oom(led, model="qwen2.5-0.5b", phase="backward", capacity_bytes=80 * GIB)
    assert ex.overflow_phase is None and ex.consistent is False
    assert "fragmentation" in ex.reason


def test_unknown_phase():
    led = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-0.5b")))
    with pytest.raises(UsageError, match="phase 'warmup'"):
        attribute_oom(led, model="qwen2.5-0.5b", phase="warmup")


def test_remedies_keep_the_runs_own_options():
    # issue 13: `mem --lora-r 64 --oom` ranked remedies against ledgers built at r = 16
    import dataclasses

    from expkit.memory.oom import rank_remedies

    led = estimate_training_memory(
        TrainingQuery(
            load_model_description("qwen2.5-1.5b"),
            seq=2048,
            method="lora",
            lora_r=64,
            gpus=2,
            shard="zero2",
            grad_ckpt="none",
        )
    )
    remedies = {r.option: r for r in rank_remedies(led)}
    ckpt = remedies["--grad-ckpt full"]
    expected = estimate_training_memory(dataclasses.replace(led.query, grad_ckpt="full"))
    assert ckpt.peak_bytes == expected.peak_bytes
    assert expected.query.lora_r == 64 and expected.query.gpus == 2 and expected.query.shard == "zero2"
    at_16 = estimate_training_memory(
        TrainingQuery(
            load_model_description("qwen2.5-1.5b"),
            seq=2048,
            method="lora",
            lora_r=16,
            gpus=2,
            shard="zero2",
            grad_ckpt="full",
        )
    )
    assert ckpt.peak_bytes != at_16.peak_bytes
