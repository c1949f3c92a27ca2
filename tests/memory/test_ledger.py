"""The ledger: identities, the 16/18 B/param conventions, sharding, inference KV cache, bad options."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.errors import UsageError
from expkit.memory import compare_conventions, estimate_inference_memory, estimate_training_memory
from expkit.memory.activations import ActivationQuery, estimate_activations, korthikanti_bytes
from expkit.memory.ledger import TrainingQuery
from expkit.models.description import load_model_description


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 8),
    seq=st.sampled_from([128, 1024, 4096]),
    method=st.sampled_from(["full", "lora", "qlora"]),
    optimizer=st.sampled_from(["adamw", "adamw8bit", "sgd", "adafactor"]),
    precision=st.sampled_from(["bf16-mixed", "fp32"]),
    ckpt=st.sampled_from(["none", "full"]),
    gpus=st.sampled_from([1, 2, 8]),
    shard=st.sampled_from(["none", "zero1", "zero2", "zero3", "fsdp"]),
)
def test_per_gpu_is_sum_of_lines_and_peak_is_at_most_the_sum(
    batch, seq, method, optimizer, precision, ckpt, gpus, shard
):
    led = estimate_training_memory(
        TrainingQuery(
            load_model_description("qwen2.5-0.5b"),
            batch=batch,
            seq=seq,
            method=method,
            optimizer=optimizer,
            precision=precision,
            grad_ckpt=ckpt,
            gpus=gpus,
            shard=shard,
        )
    )
    assert led.per_gpu_bytes == sum(ln.bytes for ln in led.lines)
    assert led.total_bytes == led.per_gpu_bytes * gpus
    assert 0 < led.peak_bytes <= led.per_gpu_bytes
    assert all(ln.bytes >= 0 and ln.formula for ln in led.lines)


def test_full_mixed_adamw_model_state_is_18_bytes_per_param_with_autocast_copies():
    # fp32 weights 4 + fp32 grads 4 + Adam 8 = 16, + 2 B autocast copies of the matmul weights
    led = estimate_training_memory(TrainingQuery(load_model_description("llama-2-7b"), seq=1024))
    P = led.total_params
    assert led.bytes_of("fp32 master weights", "gradients", "Adam m", "Adam v") == 16 * P
    linear = led.line("bf16 weights").bytes / 2
    assert 0.97 * P < linear < P  # embeddings and norms are not cast: 6.61e9 of 6.74e9


def test_conventions_reproduce_16_18_and_accelerates_max():
    cmp = compare_conventions(estimate_training_memory(TrainingQuery(load_model_description("llama-2-7b"), seq=4096)))
    per = cmp.model_state_bytes_per_param
    assert per["zero"] == pytest.approx(16)  # ZeRO paper sec 3.1: 2 + 2 + 12
    assert per["hf"] == pytest.approx(18)  # HF Model Memory Anatomy: 6 + 4 + 8
    assert per["deepspeed"] == pytest.approx(20, rel=1e-3)  # ZeRO-2 estimator, 1 GPU: 4 + 16
    assert per["accelerate"] == pytest.approx(8)  # max(model 4, grads 6, optimizer 8, step 8)
    act = next(r for r in cmp.rows if r.line == "activations")
    assert act.bytes_by_convention["expkit"] > 0 and act.bytes_by_convention["hf"] == 0


def test_fsdp_over_8_divides_the_training_state():
    one = estimate_training_memory(TrainingQuery(load_model_description("llama-2-7b"), seq=2048))
    eight = estimate_training_memory(
        TrainingQuery(load_model_description("llama-2-7b"), seq=2048, gpus=8, shard="fsdp")
    )
    for name in ("fp32 master weights", "gradients", "Adam m", "Adam v"):
        assert eight.line(name).bytes == one.line(name).bytes // 8
    assert eight.line("activations").bytes == one.line("activations").bytes  # activations are per micro-batch


def test_zero1_shards_only_optimizer_state():
    led = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-1.5b"), gpus=4, shard="zero1"))
    one = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-1.5b")))
    assert led.line("Adam m").bytes == one.line("Adam m").bytes // 4
    assert led.line("gradients").bytes == one.line("gradients").bytes


def test_checkpointing_shrinks_activations():
    a = (
        estimate_training_memory(TrainingQuery(load_model_description("llama-2-7b"), seq=4096))
        .line("activations")
        .bytes
    )
    b = (
        estimate_training_memory(TrainingQuery(load_model_description("llama-2-7b"), seq=4096, grad_ckpt="full"))
        .line("activations")
        .bytes
    )
    assert b < a / 10


def test_korthikanti_without_scores_llama2_7b_is_17_gib():
    # issue 7: the formula without the s^2 term gives 17.0 GiB for Llama-2-7B at B=1, T=4096
    k = korthikanti_bytes(seq=4096, batch=1, hidden=4096, heads=32, num_layers=32, with_scores=False)
    assert k == 34 * 4096 * 4096 * 32
    assert k / 2**30 == pytest.approx(17.0, abs=0.01)


def test_activation_terms_sum_to_layer_bytes():
    spec = load_model_description("qwen2.5-0.5b")
    est = estimate_activations(spec, ActivationQuery(batch=2, seq=512, precision="fp32"))
    assert est.layer_bytes == sum(t.bytes_per_token for t in est.layer_terms) * 2 * 512
    assert est.stored_bytes == 24 * est.layer_bytes


def test_inference_kv_cache_is_gqa_aware():
    led = estimate_inference_memory("llama-3-8b", context=8192)
    # 2 (K, V) * 32 layers * 8 kv heads * 128 head_dim * 8192 tokens * 2 B = 1 GiB exactly
    assert led.line("KV cache").bytes == 2 * 32 * 8 * 128 * 8192 * 2 == 2**30
    mha = estimate_inference_memory("llama-2-7b", context=8192)
    assert mha.line("KV cache").bytes == 4 * 2**30  # 32 kv heads: 4x Llama-3's 8


def test_fits_uses_the_gpu_registry():
    small = estimate_training_memory(
        TrainingQuery(load_model_description("qwen2.5-0.5b"), method="lora", seq=512, gpu="4090")
    )
    big = estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-72b"), seq=4096, gpu="h100"))
    assert small.fits is True and small.gpu_memory_bytes == 24 * 10**9
    assert big.fits is False


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"gpus": 0}, r"^gpus must be a positive integer, got 0"),
        ({"method": "dora"}, r"^method 'dora'"),
        ({"precision": "int8"}, r"^precision 'int8'"),
        ({"shard": "zero4"}, r"^shard 'zero4'"),
    ],
)
def test_bad_options_are_named(kwargs, match):
    with pytest.raises(UsageError, match=match):
        estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-0.5b"), **kwargs))


def test_unknown_convention_is_named():
    # conventions are views applied by the caller (expkit.memory.conventions), not options of the ledger
    from expkit.memory.conventions import ledger_for_convention

    with pytest.raises(UsageError, match=r"^convention 'megatron' is not one of"):
        ledger_for_convention(
            estimate_training_memory(TrainingQuery(load_model_description("qwen2.5-0.5b"))), "megatron"
        )
