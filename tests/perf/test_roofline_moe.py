"""Roofline for mixture-of-experts, latent attention and sliding windows, against hand calculations."""

from __future__ import annotations

import pytest

from expkit.models import describe_config, load_model_description
from expkit.perf.roofline import estimate_roofline, roof_for_gpu

H100 = roof_for_gpu("H100")

# Mixtral-8x7B by hand, per layer: attention q, o 4096^2 each + k, v 4096*1024 each = 41,943,040;
# router 4096*8 = 32,768; one expert 3 * 4096 * 14336 = 176,160,768; head 32000 * 4096 = 131,072,000.
MIX_ATT, MIX_ROUTER, MIX_EXPERT, MIX_HEAD = 41_943_040, 32_768, 176_160_768, 131_072_000


def test_mixtral_description_sums_its_layers_by_hand():
    m = load_model_description("mixtral-8x7b")
    (moe,) = m.routed_mlps()  # one MoE kind, in all 32 layers
    assert (sum(ly.mlp is moe for ly in m.layers), moe.num_experts, moe.top_k) == (32, 8, 2)
    assert moe.expert_params(4096) == MIX_EXPERT
    assert m.active_linear_params() == 32 * (MIX_ATT + MIX_ROUTER + 2 * MIX_EXPERT) + MIX_HEAD == 12_748_587_008
    assert m.linear_params() == 32 * (MIX_ATT + MIX_ROUTER + 8 * MIX_EXPERT) + MIX_HEAD


def test_mixtral_decode_reads_active_weights_at_batch_1_and_nearly_all_at_batch_256():
    m = load_model_description("mixtral-8x7b")
    one = estimate_roofline(model=m, roof=H100, phase="decode", batch=1, context=1024)
    assert one.weight_bytes == pytest.approx(2 * m.active_linear_params())  # bf16, top-2 of 8 experts
    # batch 4: E (1 - (1 - 2/8)^4) = 8 * (1 - 0.31640625) = 5.46875 experts per MoE layer
    four = estimate_roofline(model=m, roof=H100, phase="decode", batch=4, context=1024)
    dense = m.linear_params() - 32 * 8 * MIX_EXPERT
    assert four.weight_bytes == pytest.approx(2 * (dense + 32 * 5.46875 * MIX_EXPERT))
    big = estimate_roofline(model=m, roof=H100, phase="decode", batch=256, context=1024)
    assert big.weight_bytes == pytest.approx(2 * m.linear_params(), rel=1e-9)
    # not the dense 7B reading of the issue: batch 1 moves 25.5 GB of weights per step, not 14.2 GB
    assert one.weight_bytes / 1e9 == pytest.approx(25.5, abs=0.05)


def test_moe_critical_batch_exceeds_a_dense_model_of_the_same_active_size():
    m = load_model_description("mixtral-8x7b")
    e = estimate_roofline(model=m, roof=H100, phase="decode", batch=1)
    # a dense Mistral whose MLP is the two experts a token uses: the same active weights but the router's
    raw = {k: v for k, v in m.raw.items() if k not in ("num_local_experts", "num_experts_per_tok")}
    dense = describe_config(dict(raw, model_type="mistral", intermediate_size=2 * 14336), name="dense", source="test")
    assert dense.active_linear_params() == m.active_linear_params() - 32 * MIX_ROUTER
    d = estimate_roofline(model=dense, roof=H100, phase="decode", batch=1)
    # by then all 8 experts are read: weights are 46.5B/12.7B = 3.66x the active ones, so ~3.66x the batch
    assert e.critical_batch > 3 * d.critical_batch
    at = estimate_roofline(model=m, roof=H100, phase="decode", batch=round(e.critical_batch))
    assert at.parts[0].intensity_flop_per_byte == pytest.approx(H100.ridge_flop_per_byte, rel=0.01)
    assert any("uniform" in a for a in e.assumptions)


def test_olmoe_style_reads_eight_experts_not_one():
    cfg = {
        "model_type": "olmoe",
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "intermediate_size": 1024,
        "num_experts": 64,
        "num_experts_per_tok": 8,
        "vocab_size": 50304,
    }
    m = describe_config(cfg, name="olmoe", source="test")
    e = estimate_roofline(model=m, roof=H100, phase="decode", batch=1)
    # per layer: attention 4 * 2048^2 + router 2048 * 64 + 8 experts * 3 * 2048 * 1024; + head 50304 * 2048
    active = 16 * (4 * 2048**2 + 2048 * 64 + 8 * 3 * 2048 * 1024) + 50304 * 2048
    assert e.weight_bytes == pytest.approx(2 * active)


def test_deepseek_mla_cache_is_latent_plus_rope_key():
    m = load_model_description("deepseek-v3")
    e = estimate_roofline(model=m, roof=H100, phase="decode", batch=1, context=8192)
    # 61 layers * (512 + 64) * 8192 tokens * 2 B = 0.536 GiB (not 13.3 GiB of 128 heads x 56)
    assert e.parts[1].bytes == 61 * 576 * 8192 * 2
    assert e.parts[1].bytes / 2**30 == pytest.approx(0.536, abs=0.001)
    # absorbed form: per head 2 (512 + 64) + 2 * 512 FLOP per cached token
    assert e.parts[1].flops == 61 * 8192 * 128 * (2 * 576 + 2 * 512)
    assert any("absorbed" in a for a in e.assumptions)


def test_gemma2_sliding_layers_cap_kv_reads():
    m = load_model_description("gemma-2-9b")
    e = estimate_roofline(model=m, roof=H100, phase="decode", batch=2, context=8192)
    per_token_layer = 2 * 8 * 256 * 2  # K and V, 8 kv heads, head_dim 256, bf16
    assert e.parts[1].bytes == 2 * per_token_layer * (21 * 4096 + 21 * 8192)
    short = estimate_roofline(model=m, roof=H100, phase="decode", batch=2, context=2048)
    assert short.parts[1].bytes == 2 * per_token_layer * 42 * 2048  # below the window every layer holds all


def test_sliding_window_caps_prefill_pairs():
    from expkit.models import GroupedQueryAttention

    def pairs(context: int, window: int | None) -> float:
        spec = GroupedQueryAttention(num_heads=4, num_kv_heads=1, head_dim=8, v_head_dim=8, window=window)
        return spec.causal_pairs(context)

    assert pairs(8, None) == 32
    assert pairs(8, 4) == 4 * 4 / 2 + 4 * 4  # first 4 queries see 1..4 keys (~8), the rest 4 each
