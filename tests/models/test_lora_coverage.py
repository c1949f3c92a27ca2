"""Which matmul modules LoRA adapts and which it leaves out, per layer kind (issue 19 item 5).

The truth is peft's own record on the full-depth model: ``PeftModel.targeted_module_names`` after
``get_peft_model(..., target_modules="all-linear")``, and the model's nn.Linear / fused-expert modules that are
not in it. expkit's per-kind lists (``LayerKindCount.lora_adapted`` / ``lora_left_out``, counted by peft on one
layer of each kind) must equal it layer by layer, and ``sft params`` must print them.
"""

from __future__ import annotations

import json
import re
import warnings

import pytest

from expkit.models import describe_config
from expkit.models.counting import build_meta_model, count_model

BASE = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "intermediate_size": 96,
    "vocab_size": 128,
    "tie_word_embeddings": False,
}
CONFIGS = {
    "dense llama": dict(BASE, model_type="llama", num_hidden_layers=3),
    "mixtral": dict(BASE, model_type="mixtral", num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2),
    # DeepSeek-V3: 2 dense layers then MoE with a shared expert (the case of the issue)
    "deepseek-v3": dict(
        BASE,
        model_type="deepseek_v3",
        num_hidden_layers=4,
        first_k_dense_replace=2,
        n_routed_experts=8,
        num_experts_per_tok=2,
        n_shared_experts=1,
        moe_intermediate_size=32,
        n_group=2,
        topk_group=1,
        kv_lora_rank=32,
        q_lora_rank=48,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16,
        v_head_dim=16,
    ),
}
LAYER = re.compile(r"^(?:.*\.)?layers\.(\d+)\.(.+)$")


def _peft_truth(raw: dict) -> dict[int, tuple[set[str], set[str]]]:
    """{layer index: (adapted, left out)} from peft on the full-depth meta model: adapted = the modules peft
    says it targeted (``targeted_module_names``, and the owners of ``targeted_parameter_names``); left out =
    the layer's nn.Linear modules and fused-expert holders (3-D weights) not among them."""
    import torch
    from peft import LoraConfig, get_peft_model

    model = build_meta_model(describe_config(raw, name="m", source="t"))
    matmuls: dict[int, set[str]] = {}
    for name, mod in model.named_modules():
        m = LAYER.match(name)
        if m is None:
            continue
        holds_3d = any(p.dim() >= 3 for p in mod.parameters(recurse=False))
        if isinstance(mod, torch.nn.Linear) or (holds_3d and not isinstance(mod, torch.nn.modules.conv._ConvNd)):
            matmuls.setdefault(int(m.group(1)), set()).add(m.group(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear"))
    adapted: dict[int, set[str]] = {}
    # modules peft wrapped, and the owners of the parameters it wrapped (fused experts, a router's weight)
    owners = [n.rsplit(".", 1)[0] for n in getattr(pm, "targeted_parameter_names", None) or []]
    for name in [*pm.targeted_module_names, *owners]:
        m = LAYER.match(name)
        if m is not None:
            adapted.setdefault(int(m.group(1)), set()).add(m.group(2))
    return {i: (adapted.get(i, set()), mods - adapted.get(i, set())) for i, mods in matmuls.items()}


def _per_layer(raw: dict) -> dict[int, tuple[set[str], set[str]]]:
    """expkit's lists, expanded from layer kinds back to layer indices (kinds appear in layer order)."""
    desc = describe_config(raw, name="m", source="t")
    counts = count_model(desc, lora_r=4)
    assert counts is not None
    labels = [layer.label for layer in desc.layers]
    kinds = {k.label: k for k in counts.layer_kinds}
    return {i: (set(kinds[lb].lora_adapted), set(kinds[lb].lora_left_out)) for i, lb in enumerate(labels)}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_adapted_and_left_out_equal_peft_on_the_full_depth_model(name):
    assert _per_layer(CONFIGS[name]) == _peft_truth(CONFIGS[name])


def test_dense_llama_leaves_nothing_out():
    # every nn.Linear of a Llama block is adapted by all-linear: nothing to report
    assert all(not left for _, left in _per_layer(CONFIGS["dense llama"]).values())


def test_deepseek_v3_what_the_installed_peft_leaves_out_is_reported():
    # the case: whatever this peft does with the dense MLP and the shared expert, the lists say it, and
    # adapted + left out cover every matmul module of each layer (nothing silently unaccounted)
    per_layer = _per_layer(CONFIGS["deepseek-v3"])
    dense_all = {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}
    shared_all = {f"mlp.shared_experts.{p}" for p in ("gate_proj", "up_proj", "down_proj")}
    for i in (0, 1):
        adapted, left = per_layer[i]
        assert dense_all <= adapted | left and not adapted & left
    for i in (2, 3):
        adapted, left = per_layer[i]
        assert shared_all <= adapted | left and "mlp.experts" in adapted | left


def test_sft_params_prints_and_returns_the_lists(tmp_path):
    from typer.testing import CliRunner

    from expkit.cli.app import app

    (tmp_path / "config.json").write_text(json.dumps(CONFIGS["deepseek-v3"]))
    runner = CliRunner()
    res = runner.invoke(app, ["sft", "params", str(tmp_path), "--lora-r", "4", "--json"])
    assert res.exit_code == 0, res.output
    kinds = json.loads(res.stdout)["result"]["layer_kinds"]
    truth = _peft_truth(CONFIGS["deepseek-v3"])
    assert [set(k["lora_left_out"]) for k in kinds] == [truth[0][1], truth[2][1]]
    human = runner.invoke(app, ["sft", "params", str(tmp_path), "--lora-r", "4"])
    assert human.exit_code == 0, human.output
    assert human.output.count("LoRA on: ") == 2
    for k in kinds:
        if k["lora_left_out"]:
            assert f"left out by peft (frozen, no adapter): {', '.join(k['lora_left_out'])}" in human.output
