"""The model description read from config.json: layer kinds, attention kinds, windows, bits, refusals."""

from __future__ import annotations

import json

import pytest

from expkit.errors import InputError, UsageError
from expkit.models import describe_config, load_model_description, read_model_config

SMALL = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 100,
}


def test_deepseek_v3_layers_are_three_dense_then_moe_with_mla():
    d = load_model_description("deepseek-v3")
    groups = d.layer_groups()
    assert [c for _, c in groups] == [3, 58]  # first_k_dense_replace = 3 of 61 layers
    moe = groups[1][0].mlp
    assert (moe.num_experts, moe.top_k, moe.expert_intermediate_size, moe.shared_intermediate_size) == (
        256,
        8,
        2048,
        2048,
    )
    att = groups[1][0].attention
    # MLA caches the 512-wide latent + the 64-wide rotary key: 576 elements per token-layer
    assert att.kind == "mla" and att.kv_cache_elements_per_token == 512 + 64
    # published checkpoint is fp8 with one fp32 scale per 128x128 block
    assert d.weight_bits == pytest.approx(8 + 32 / 128**2) and d.quant_method == "fp8"
    assert any("num_nextn_predict_layers" in a for a in d.approximations)


def test_gemma2_alternates_sliding_and_full_layers():
    d = load_model_description("gemma-2-9b")
    windows = [layer.attention.window for layer in d.layers]
    assert windows[:4] == [4096, None, 4096, None] and windows.count(4096) == 21
    # KV elements at 8192 tokens: 21 layers hold 4096 tokens, 21 hold 8192; 2 * 8 kv heads * 256 per token
    assert d.kv_cache_elements(8192) == 2 * 8 * 256 * (21 * 4096 + 21 * 8192)


def test_attention_kinds_mha_gqa_mqa():
    assert describe_config(dict(SMALL, num_key_value_heads=4), name="m", source="t").layers[0].attention.kind == "mha"
    assert describe_config(SMALL, name="m", source="t").layers[0].attention.kind == "gqa"
    assert describe_config(dict(SMALL, num_key_value_heads=1), name="m", source="t").layers[0].attention.kind == "mqa"


def test_qwen3_moe_sparse_step_and_mlp_only_layers():
    raw = dict(
        SMALL,
        model_type="qwen3_moe",
        num_hidden_layers=6,
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        decoder_sparse_step=2,
        mlp_only_layers=[3],
    )
    kinds = [layer.mlp.kind for layer in describe_config(raw, name="m", source="t").layers]
    # transformers: MoE when (i + 1) % step == 0 and i not in mlp_only_layers
    assert kinds == ["dense", "moe", "dense", "dense", "dense", "moe"]


def test_vision_tower_and_gptq_bits():
    d = load_model_description("qwen2-vl-7b")
    assert d.towers == ("vision",)
    q = describe_config(
        dict(SMALL, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 128}), name="m", source="t"
    )
    assert q.weight_bits == pytest.approx(4 + 20 / 128)  # fp16 scale + 4-bit zero per group of 128


def test_unmodeled_field_is_listed_not_dropped():
    d = describe_config(dict(SMALL, my_new_gating="xyz"), name="m", source="t")
    assert any("my_new_gating" in a for a in d.approximations)
    assert describe_config(SMALL, name="m", source="t").approximations == ()


def test_unknown_quantization_is_refused_naming_it():
    with pytest.raises(InputError, match="quant_method = 'hqq'"):
        describe_config(dict(SMALL, quantization_config={"quant_method": "hqq"}), name="m", source="t")


def test_hidden_not_divisible_by_heads_names_the_fields():
    with pytest.raises(InputError, match="hidden_size 65 is not divisible by num_attention_heads 4"):
        describe_config(dict(SMALL, hidden_size=65), name="m", source="t")


def test_garbage_values_name_the_field():
    with pytest.raises(InputError, match="num_hidden_layers = 1,000,000,000,000 is beyond"):
        describe_config(dict(SMALL, num_hidden_layers=10**12), name="m", source="t")
    with pytest.raises(InputError, match="vocab_size must be a positive integer"):
        describe_config(dict(SMALL, vocab_size="lots"), name="m", source="t")


def test_huge_config_file_is_refused_before_parsing(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"pad": "' + "x" * (5 * 2**20) + '"}')
    with pytest.raises(InputError, match=r"too large for a config\.json"):
        read_model_config(p)


def test_hub_id_reads_the_local_hf_cache(tmp_path, monkeypatch):
    import huggingface_hub.constants as hfc

    snap = tmp_path / "models--acme--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(SMALL))
    (tmp_path / "models--acme--tiny" / "refs").mkdir()
    (tmp_path / "models--acme--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(hfc, "HF_HUB_CACHE", str(tmp_path))
    raw, name, source = read_model_config("acme/tiny")
    assert raw["hidden_size"] == 64 and name == "tiny" and "Hugging Face cache" in source


def test_uncached_hub_id_says_how_to_fetch_config_only(tmp_path, monkeypatch):
    import huggingface_hub.constants as hfc

    monkeypatch.setattr(hfc, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(UsageError) as err:
        read_model_config("acme/not-here")
    assert "hf download acme/not-here config.json" in err.value.hint
