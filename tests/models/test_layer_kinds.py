"""The layer kinds issue 19 item 3 added: chunked attention, the Mamba and gated-DeltaNet mixers, and the layer
patterns read from published configs (Llama-4-Scout, Jamba, Qwen3-Next). Expected values are derived by hand
from the config numbers; the end-to-end truths (transformers' caches, meta-device counts) are in published/."""

from __future__ import annotations

from pathlib import Path

import pytest

from expkit.models import GroupedQueryAttention, load_model_description
from expkit.models.recurrent import STATE_BYTES, GatedDeltaNet, MambaMixer

PUBLISHED = Path(__file__).with_name("published") / "configs"


def _gqa(**kw) -> GroupedQueryAttention:
    return GroupedQueryAttention(num_heads=8, num_kv_heads=2, head_dim=16, v_head_dim=16, **kw)


def test_chunk_caps_the_cache_and_splits_the_causal_pairs():
    full, chunked = _gqa(), _gqa(chunk=4)
    # within one chunk, chunked attention is full attention
    assert chunked.cache_elements(3) == full.cache_elements(3) == 3 * 2 * 2 * 16
    assert chunked.causal_pairs(4) == full.causal_pairs(4) == 8
    # past it: one chunk kept; 10 tokens = 2 chunks of 4 (4^2/2 each) + 2 tokens (2^2/2)
    assert chunked.cache_elements(10) == 4 * 2 * 2 * 16
    assert chunked.causal_pairs(10) == 2 * 8 + 2
    assert chunked.causal_pairs(10) < _gqa(window=4).causal_pairs(10)  # a window of 4 sees more keys
    assert chunked.label == "gqa chunk 4"


def test_output_gate_doubles_the_query_projection():
    plain, gated = _gqa().linear_shapes(128), _gqa(output_gate=True).linear_shapes(128)
    assert gated[0] == (128, 2 * 8 * 16) and plain[0] == (128, 8 * 16)
    assert gated[1:] == plain[1:]


# Jamba-v0.1: inner = 2 * 4096, d_conv 4, d_state 16 -> conv 8192 * 4 at 2 B + ssm 8192 * 16 at 4 B
JAMBA_STATE_BYTES = 8192 * 4 * 2 + 8192 * 16 * 4  # 589,824
# Qwen3-Next: conv over q, k (16 key heads * 128 each) and v (32 value heads * 128), kernel 4, at 2 B;
# state 32 heads * 128 * 128 at 4 B
QWEN3_NEXT_STATE_BYTES = (2 * 16 * 128 + 32 * 128) * 4 * 2 + 32 * 128 * 128 * 4  # 2,162,688


@pytest.mark.parametrize(
    ("mixer", "expected"),
    [
        (
            MambaMixer(
                num_heads=1,
                num_kv_heads=1,
                head_dim=8192,
                v_head_dim=8192,
                inner=8192,
                d_state=16,
                dt_rank=256,
                conv_channels=8192,
                conv_kernel=4,
            ),
            JAMBA_STATE_BYTES,
        ),
        (
            GatedDeltaNet(
                num_heads=32, num_kv_heads=16, head_dim=128, v_head_dim=128, conv_channels=8192, conv_kernel=4
            ),
            QWEN3_NEXT_STATE_BYTES,
        ),
    ],
)
def test_recurrent_state_is_fixed_per_sequence(mixer, expected):
    assert STATE_BYTES == 4
    assert mixer.kv_cache_elements_per_token == 0
    assert mixer.cache_bytes(1, 2) == mixer.cache_bytes(1_000_000, 2) == expected
    # decode reads one state: FLOPs do not grow with the context; prefill is linear in it
    assert mixer.decode_flop_per_cached_token * mixer.cached_tokens(8) == (
        mixer.decode_flop_per_cached_token * mixer.cached_tokens(80_000)
    )
    assert mixer.pair_flop * mixer.causal_pairs(2000) == 2 * mixer.pair_flop * mixer.causal_pairs(1000)


def test_llama4_scout_layers_chunked_nope_and_shared_expert():
    d = load_model_description(PUBLISHED / "llama-4-scout-17b-16e")
    # no_rope_layer_interval 4: layers 3, 7, ... are NoPE with full attention, the others chunked (8192)
    full = [i for i, layer in enumerate(d.layers) if layer.attention.chunk is None]
    assert full == list(range(3, 48, 4))
    assert {layer.attention.chunk for i, layer in enumerate(d.layers) if i not in full} == {8192}
    # interleave_moe_layer_step 1: every layer MoE, 16 experts top-1, one shared expert of intermediate_size
    assert {(layer.mlp.num_experts, layer.mlp.top_k) for layer in d.layers} == {(16, 1)}
    assert d.layers[0].mlp.active_linear_params(5120) == 16 * 5120 + 2 * 3 * 5120 * 8192  # router + shared + 1
    # 32k context: 36 layers hold one chunk, 12 the whole context; 2 * 8 kv heads * 128 at 2 B
    per_token = 2 * 8 * 128 * 2
    assert d.cache_bytes(32768, 2) == (36 * 8192 + 12 * 32768) * per_token
    assert not [n for n in d.approximations if "attention_chunk_size" in n or "interleave" in n]


def test_jamba_pattern_one_attention_in_8_moe_every_2nd():
    d = load_model_description(PUBLISHED / "jamba-v0.1")
    attn = [i for i, layer in enumerate(d.layers) if layer.attention.kind != "mamba"]
    assert attn == [4, 12, 20, 28]  # attn_layer_offset 4, period 8
    assert [i for i, layer in enumerate(d.layers) if layer.mlp.num_experts] == list(range(1, 32, 2))
    # 28 Mamba states + 4 attention layers' K, V (8 kv heads * 128) at 4096 tokens, 2 B
    assert d.cache_bytes(4096, 2) == 28 * JAMBA_STATE_BYTES + 4 * 2 * 8 * 128 * 4096 * 2


def test_qwen3_next_pattern_three_linear_to_one_full():
    d = load_model_description(PUBLISHED / "qwen3-next-80b-a3b-instruct")
    assert [i for i, layer in enumerate(d.layers) if layer.attention.kind == "gqa"] == list(range(3, 48, 4))
    full = d.layers[3].attention
    assert full.output_gate and full.qk_norm
    assert d.cache_bytes(4096, 2) == 36 * QWEN3_NEXT_STATE_BYTES + 12 * 2 * 2 * 256 * 4096 * 2
