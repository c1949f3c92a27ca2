"""The recurrent mixers' saved-activation terms (``MambaMixer``, ``GatedDeltaNet``) against what transformers'
PyTorch path saves on the CPU, counted with ``saved_tensors_hooks`` (unique storages, parameters and their
autocast copies out: ``expkit.memory.replica.measure_saved_bytes``).

Tiny Jamba- and Qwen3-Next-style models with the real layer classes: one layer's bytes are the 2-layer model's
minus the 1-layer model's, at two sequence lengths; their slope per token must equal the spec's terms exactly
(what grows with the tokens), and what is left is a per-sequence constant of a few KB the spec does not count.
"""

from __future__ import annotations

import pytest

from expkit.memory.activations import ActivationQuery, estimate_activations
from expkit.memory.replica import ReplicaQuery, build_replica, measure_saved_bytes
from expkit.models.description import describe_config

pytestmark = pytest.mark.filterwarnings("ignore")


def _jamba(layers: int = 2) -> dict:
    # attention every 4th layer from layer 3: layers 0 and 1 are Mamba; one expert: dense MLPs
    return dict(
        model_type="jamba",
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=256,
        attn_layer_period=4,
        attn_layer_offset=3,
        expert_layer_period=2,
        expert_layer_offset=1,
        num_experts=1,
        num_experts_per_tok=1,
        mamba_d_state=8,
        mamba_d_conv=4,
        mamba_expand=2,
        mamba_dt_rank=8,
        tie_word_embeddings=True,
    )


def _qwen3_next(value_heads: int, key_heads: int, dk: int, dv: int, layers: int = 2) -> dict:
    return dict(
        model_type="qwen3_next",
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=256,
        layer_types=["linear_attention"] * layers,
        linear_num_value_heads=value_heads,
        linear_num_key_heads=key_heads,
        linear_key_head_dim=dk,
        linear_value_head_dim=dv,
        linear_conv_kernel_dim=4,
        num_experts=2,
        num_experts_per_tok=1,
        mlp_only_layers=list(range(layers)),  # dense MLPs: only the mixer is under test
        moe_intermediate_size=32,
        shared_expert_intermediate_size=32,
        tie_word_embeddings=True,
    )


def _layer_slope(cfg: dict, precision: str, seqs: tuple[int, int]) -> tuple[float, dict[int, int]]:
    """(measured bytes per token of one layer, measured bytes of one layer at each length)."""
    spec = describe_config(cfg, name="tiny", source="test")
    layer = {}
    for seq in seqs:
        by_depth = [
            measure_saved_bytes(
                build_replica(spec, ReplicaQuery(num_layers=n, precision=precision)),
                batch=1,
                seq=seq,
                precision=precision,
            ).activation_bytes
            for n in (1, 2)
        ]
        layer[seq] = by_depth[1] - by_depth[0]
    a, b = seqs
    return (layer[b] - layer[a]) / (b - a), layer


def _predicted_per_token(cfg: dict, precision: str, seq: int) -> tuple[float, list[str]]:
    spec = describe_config(cfg, name="tiny", source="test").with_layers(1)
    est = estimate_activations(spec, ActivationQuery(batch=1, seq=seq, precision=precision, device="cpu"))
    return est.stored_bytes / seq, [t.name for t in est.layer_terms]


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed"])
def test_mamba_terms_equal_what_the_torch_scan_saves(precision):
    seqs = (32, 64)
    measured, layer = _layer_slope(_jamba(), precision, seqs)
    predicted, names = _predicted_per_token(_jamba(), precision, seqs[1])
    print(f"mamba {precision}: measured {measured:.2f} B/token/layer, predicted {predicted:.2f}")
    assert measured == pytest.approx(predicted, abs=0.5)  # exact: whole bytes per token
    # the mixer alone: 17,452 B per token in fp32 here, 10x the old "approximate" terms (1,792)
    assert not any("approximate" in n for n in names)
    # what is left does not grow with the tokens: A, exp(A), the initial state, the conv padding (a few KB)
    rest = [layer[s] - predicted * s for s in seqs]
    assert rest[0] == pytest.approx(rest[1], abs=1)
    d, n, k = 128, 8, 4
    assert 0 < rest[0] <= 4 * (3 * d * n + d * k)


@pytest.mark.parametrize(
    "heads", [(4, 2, 16, 24), (8, 4, 8, 16), (4, 4, 16, 24)], ids=["hv4-hk2", "hv8-hk4", "hv4-hk4-unshared"]
)
def test_gated_deltanet_terms_equal_what_the_torch_chunk_rule_saves(heads):
    # two and three chunks of 64 (transformers' chunk size): the per-token slope, past the first chunk
    cfg = _qwen3_next(*heads)
    seqs = (128, 192)
    measured, layer = _layer_slope(cfg, "fp32", seqs)
    predicted, names = _predicted_per_token(cfg, "fp32", seqs[1])
    print(f"gated-deltanet {heads} fp32: measured {measured:.3f} B/token/layer, predicted {predicted:.3f}")
    assert measured == pytest.approx(predicted, abs=1e-3)
    assert not any("approximate" in n for n in names)
    rest = [layer[s] - predicted * s for s in seqs]
    assert rest[0] == pytest.approx(rest[1], abs=1) and abs(rest[0]) < 0.05 * layer[seqs[0]]


def test_unmeasured_settings_stay_marked_approximate():
    mixer = describe_config(_qwen3_next(4, 2, 16, 24), name="tiny", source="test").layers[0].attention
    ctx = ActivationQuery(batch=1, seq=128, precision="fp32", device="cpu").context(64)
    autocast = ActivationQuery(batch=1, seq=128, precision="bf16-mixed", device="cpu").context(64)
    assert any("approximate" in t.name for t in mixer.saved_terms(autocast))  # not linear in the tokens there
    lora = ActivationQuery(batch=1, seq=128, precision="fp32", method="lora", device="cpu").context(64)
    jamba = describe_config(_jamba(), name="tiny", source="test").layers[0].attention
    assert any("approximate" in t.name for t in jamba.saved_terms(lora))
    assert not any("approximate" in t.name for t in jamba.saved_terms(ctx))


def test_the_kernel_assumption_is_listed_with_the_approximations():
    for cfg, kind in ((_jamba(), "mamba"), (_qwen3_next(4, 2, 16, 24), "gated-deltanet")):
        notes = describe_config(cfg, name="tiny", source="test").approximations
        assert any(n.startswith(f"{kind} training activations: what transformers' PyTorch path") for n in notes)
