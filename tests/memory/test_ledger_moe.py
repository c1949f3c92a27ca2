"""The ledger for mixture-of-experts, latent attention, sliding windows and quantized checkpoints."""

from __future__ import annotations

import dataclasses

import pytest

from expkit.memory import ActivationQuery, estimate_activations, estimate_inference_memory, estimate_training_memory
from expkit.memory.ledger import TrainingQuery
from expkit.memory.validation import MOE_CASES, validate_ledger
from expkit.models.description import load_model_description


def test_mla_kv_cache_is_the_latent():
    led = estimate_inference_memory("deepseek-v3", context=8192)
    # 61 layers * (kv_lora_rank 512 + rope key 64) * 8192 * 2 B = 0.536 GiB (the 0.54, not 13.3)
    assert led.line("KV cache").bytes == 61 * 576 * 8192 * 2


def test_sliding_window_caps_the_kv_cache():
    led = estimate_inference_memory("gemma-2-9b", context=8192, batch=2)
    # 21 sliding layers hold 4096 tokens, 21 global ones 8192; 2 * 8 kv heads * 256 * 2 B per token-layer
    assert led.line("KV cache").bytes == 2 * 2 * 8 * 256 * 2 * (21 * 4096 + 21 * 8192)


def test_quantized_checkpoint_weights_at_their_bytes():
    led = estimate_inference_memory("deepseek-v3", context=1024)
    from expkit.memory import count_parameters

    c = count_parameters("deepseek-v3")
    matmul = sum(k.layers * k.matmul_params_per_layer for k in c.layer_kinds)
    # fp8 with one fp32 scale per 128 x 128 block on the decoder layers' matmul weights; embeddings, head,
    # norms bf16 (the checkpoint keeps its norms in bf16; they were counted at fp8 before the storage kinds)
    expected = int((8 + 32 / 128**2) / 8 * matmul + 2 * (c.total_params - matmul))
    assert led.line("weights").bytes == expected
    assert led.line("weights").bytes / 2**30 == pytest.approx(626.8, abs=0.1)
    assert any("fp8" in a for a in led.approximations)


def test_fsdp_gathers_the_largest_layer_kind():
    led = estimate_training_memory(
        TrainingQuery(load_model_description("deepseek-v3"), seq=1024, gpus=256, shard="fsdp")
    )
    # a DeepSeek-V3 MoE layer: 256 experts * 3 * 7168 * 2048 + shared 3 * 7168 * 2048 + router 256 * 7168
    # + MLA 187,107,328 + norms 14,336 = 11,507,286,016 parameters (42.9 GiB in fp32), not a dense layer's 0.58B
    moe_layer = 256 * 3 * 7168 * 2048 + 3 * 7168 * 2048 + 256 * 7168 + 187_107_328 + 2 * 7168
    assert moe_layer == 11_507_286_016
    assert led.line("bf16 weights").bytes == 2 * 2 * moe_layer


@pytest.mark.parametrize("case", MOE_CASES[:3], ids=lambda c: c.model_type)
def test_moe_activation_terms_match_saved_tensors(case):
    # the layer formula against autograd's saved tensors on 1- and 2-layer replicas (CPU, fp32)
    from expkit.memory.replica import build_replica, measure_saved_bytes

    seq = 512  # a per-layer constant of ~30 KB (routing bookkeeping) is < 0.5% here
    saved = {}
    for n in (1, 2):
        # every layer MoE (DeepSeek's config default is first_k_dense_replace = 3, so it is set to 0)
        extra = tuple((k, 0 if k == "first_k_dense_replace" else v) for k, v in case.extra)
        spec = dataclasses.replace(case, layers=n, extra=extra).description()
        saved[n] = measure_saved_bytes(build_replica(spec), batch=1, seq=seq).activation_bytes
    est = estimate_activations(spec, ActivationQuery(batch=1, seq=seq, precision="fp32", device="cpu"))
    per_layer = saved[2] - saved[1]
    assert est.layer_kinds[-1][2] == pytest.approx(per_layer, rel=0.01)  # 1%: rotary copies, routing bookkeeping


def test_moe_replica_peak_within_10_percent():
    table = validate_ledger(MOE_CASES[:1], device="cpu")
    assert table.rows[0].within_tolerance, table.rows[0]
    assert abs(table.rows[0].rel_error) <= 0.10


def test_moe_ledger_is_not_the_dense_ledger():
    moe = estimate_training_memory(TrainingQuery(load_model_description("mixtral-8x7b"), seq=1024, device="cpu"))
    act = moe.line("activations").bytes
    # Mixtral's MoE layer saves the gathered input and the gate_up / act / product / down outputs of 2 experts
    # per token: ~1.6x a dense block of the same widths
    assert "MoE 8 experts top-2" in moe.line("activations").formula
    assert act > 1.5 * 32 * 1024 * (2 * (4 * 4096 + 4 + 4 * 4096))
