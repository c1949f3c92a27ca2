"""The offline demo model: loads like any checkpoint, carries the ChatML template and the base-model eos."""

from __future__ import annotations

import json

from expkit.finetune.demomodel import CHATML_TEMPLATE, demo_model_spec, ensure_demo_model


def test_demo_model_loads_with_from_pretrained(demo_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tok = AutoTokenizer.from_pretrained(demo_model_dir)
    model = AutoModelForCausalLM.from_pretrained(demo_model_dir)
    assert model.config.model_type == "qwen2"
    assert tok.chat_template == CHATML_TEMPLATE and "{%- generation %}" in tok.chat_template
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert tok.eos_token == "<|endoftext|>" and im_end != tok.eos_token_id
    # like a base checkpoint: generation stops on <|endoftext|>, not on the end of turn
    assert GenerationConfig.from_pretrained(demo_model_dir).eos_token_id == tok.eos_token_id
    info = json.loads((demo_model_dir / "expkit_demo.json").read_text())
    assert info["parameters"] == sum(p.numel() for p in model.parameters())
    assert info["pretrain_loss_last"] < info["pretrain_loss_first"]  # pre-training did something


def test_cache_is_keyed_by_the_spec(demo_model_dir):
    quick, full = demo_model_spec(quick=True), demo_model_spec(quick=False)
    assert quick.digest() != full.digest()
    again = ensure_demo_model(quick=True)
    assert again.cached and again.path == demo_model_dir and demo_model_dir.name == quick.digest()
