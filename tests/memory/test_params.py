"""Parameter counts from config values: meta-device transformers, LoRA through peft, analytic fallback."""

from __future__ import annotations

import json

import pytest

from expkit.errors import InputError, UsageError
from expkit.memory import count_parameters
from expkit.memory.params import _analytic_count
from expkit.models.counting import ParameterCount
from expkit.models.description import load_model_description


def test_qwen25_05b_base_count_is_exact():
    # Qwen2.5-0.5B model card: 0.49B total; 494,032,768 = the tied model built from its config.json values
    c = count_parameters("qwen2.5-0.5b")
    assert c.total_params == 494_032_768
    assert c.trainable_params == c.total_params
    assert c.tied_embeddings and c.lm_head_params == 0
    assert c.embedding_params == 151_936 * 896
    assert "meta-device" in c.counted_by


def test_qwen25_05b_lora_r16_all_linear():
    # hand derivation: 24 layers * 16 * [(896+896) q + (896+128) k + (896+128) v + (896+896) o
    #                                  + 3 * (896+4864) gate/up/down] = 8,798,208
    expected = 24 * 16 * (1792 + 1024 + 1024 + 1792 + 3 * 5760)
    c = count_parameters("qwen2.5-0.5b", lora_r=16)
    assert c.trainable_params == c.adapter_params == expected == 8_798_208
    assert c.trainable_fraction == pytest.approx(expected / 494_032_768, rel=1e-12)  # 1.78% of the base
    assert c.trainable_fraction_of_all == pytest.approx(expected / (494_032_768 + expected), rel=1e-12)  # 1.75%
    assert c.training_state_bytes == 16 * expected  # 140.8 MB, the seed's 141 MB


@pytest.mark.parametrize("name", ["qwen2.5-0.5b", "qwen2.5-7b", "llama-2-7b", "llama-3-8b"])
def test_analytic_fallback_agrees_with_meta_instantiation(name):
    spec = load_model_description(name)
    analytic = _analytic_count(spec, 8, 16.0, ("all-linear",))
    c = count_parameters(name, lora_r=8)
    assert type(analytic) is type(c) is ParameterCount  # one count type, whichever way it was counted
    assert analytic.model_class is None and c.model_class is not None
    same = [
        "total_params", "adapter_params", "trainable_params", "training_state_bytes", "per_layer_params",
        "lm_head_params", "embedding_params", "decoder_layer_params", "head_matmul_params", "other_params",
        "active_params", "active_params_with_embedding", "lora_alpha", "method",
    ]  # fmt: skip
    assert {k: getattr(analytic, k) for k in same} == {k: getattr(c, k) for k in same}


def test_llama2_7b_count():
    # Llama 2 paper, Table 1: 7B; HF config -> 6,738,415,616
    assert count_parameters("llama-2-7b").total_params == 6_738_415_616


def test_named_targets_count_only_those():
    c = count_parameters("qwen2.5-0.5b", lora_r=8, lora_targets="q_proj,v_proj")
    assert c.trainable_params == 24 * 8 * ((896 + 896) + (896 + 128))


def test_target_matching_nothing_lists_module_names():
    with pytest.raises(UsageError, match=r"'qkv'.*q_proj.*v_proj") as err:
        count_parameters("qwen2.5-0.5b", lora_r=8, lora_targets=["qkv"])
    assert "down_proj" in str(err.value)


def test_bad_rank():
    with pytest.raises(UsageError, match="lora_r"):
        count_parameters("qwen2.5-0.5b", lora_r=0)


def test_config_not_json_names_file_and_line(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"hidden_size": 64,\n "vocab_size": }')
    with pytest.raises(InputError, match=r"config\.json:2:.*not valid JSON"):
        count_parameters(p)


def test_config_missing_hidden_size_names_file_and_key(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(
        json.dumps({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})
    )
    with pytest.raises(InputError, match=r"config\.json.*'hidden_size'"):
        count_parameters(tmp_path)


def test_unknown_architecture_falls_back_to_analytic_and_says_so(tmp_path):
    raw = {
        "model_type": "not-a-real-arch",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    (tmp_path / "config.json").write_text(json.dumps(raw))
    c = count_parameters(tmp_path)
    assert c.counted_by.startswith("analytic") and "not-a-real-arch" in c.counted_by
    # embed 6400 + 2 * (q 4096 + k 2048 + v 2048 + o 4096 + mlp 3*8192 + norms 128) + final norm 64 + head 6400
    assert c.total_params == 6400 + 2 * (4096 + 2048 + 2048 + 4096 + 3 * 8192 + 128) + 64 + 6400


def test_unknown_name_lists_catalog():
    with pytest.raises(UsageError, match=r"qwen2\.5-0\.5b"):
        load_model_description("no-such-model-xyz")
