"""The families added for the outside batch's dev part (tests/models/outside), each against the meta-device
truth of its published config: DBRX (fields under attn_config / ffn_config), StarCoder2 and Nemotron (two-matmul
MLPs), Bamba (Mamba-2 hybrid), LFM2 (short convolutions), Falcon-H1 (attention and Mamba-2 side by side), mBART,
Pegasus, Marian and mT5 (encoder-decoders), compressed-tensors FP8, and renamed copies that resolve.

Truths come from ``outside/outside_truths.py`` (transformers 5.25 meta builds, peft, cache classes filled on the
meta device; no expkit); expkit's figures from the CLI in-process (``sft params``, ``mem --mode infer``,
``roofline``, ``--json``). Each config's figures are read once (one test per config checks them all)."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

OUTSIDE = Path(__file__).with_name("outside")
sys.path.insert(0, str(OUTSIDE))

import outside_truths as truth  # noqa: E402

# transformers' sliding cache layers keep window - 1 tokens (StarCoder2: 32 layers x 1 token of 4 KiB in 268 MB)
KV_REL = 1e-3
# the roofline leaves norms and biases out of the weights it reads (< 0.1 % here)
BYTES_REL = 5e-3
DECODERS = (
    "dbrx-instruct",
    "renamed-dbrx-arch",  # architectures renamed, model_type kept: read as dbrx
    "starcoder2-7b",
    "nemotron-mini-4b-instruct",
    "bamba-9b",
    "renamed-bamba-type",  # model_type renamed, BambaForCausalLM kept
    "lfm2-1.2b",
    "falcon-h1-0.5b-instruct",
    "deepseek-v2-lite-chat",
)
ENCODER_DECODERS = ("mbart-large-50", "opus-mt-en-de", "pegasus-large", "renamed-mt5-type")
NO_PEFT_LORA = ("falcon-h1-0.5b-instruct",)  # peft refuses LoRA on its Mamba out_proj / conv1d


@functools.cache
def _result(*args: str) -> dict[str, Any]:
    from typer.testing import CliRunner

    from expkit.cli.app import app

    res = CliRunner().invoke(app, [*args, "--json"])
    env = json.loads(res.stdout)
    assert res.exit_code == 0, env.get("error")
    return env["result"]


def _figures(name: str) -> dict[str, Any]:
    d = str(OUTSIDE / "configs" / name)
    params = _result("sft", "params", d)
    infer = _result("mem", d, "--mode", "infer", "--context", "4096")
    roof = _result("roofline", "--model", d, "--gpu", "H100", "--batch", "1", "--context", "4096")
    lines = {ln["name"]: ln["bytes"] for ln in infer["lines"]}
    parts = {p["name"]: p["bytes"] for p in roof["parts"]}
    return {
        "total": params["total_params"],
        "active": params["active_params"],
        "kv": lines["KV cache"],
        "weights": lines["weights"],
        "decode_bytes": roof["weight_bytes"],
        "roofline_kv": parts["KV-cache attention"],
        "notes": " ".join(infer.get("notes", [])),
    }


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_families_against_the_meta_build(name):
    got = _figures(name)
    assert got["total"] == truth.total_params(name)
    assert got["active"] == truth.active_params(name)
    kv = truth.cache_bytes(name, 4096)
    assert got["kv"] == pytest.approx(kv, rel=KV_REL)
    assert got["roofline_kv"] == pytest.approx(kv, rel=KV_REL)
    assert got["weights"] == 2 * truth.total_params(name)
    assert got["decode_bytes"] == pytest.approx(truth.decode_weight_bytes(name), rel=BYTES_REL)
    assert "treated as full attention" not in got["notes"]  # every layer type is read


@pytest.mark.parametrize("name", [n for n in DECODERS if n not in NO_PEFT_LORA])
def test_decoder_families_lora_all_linear_equals_peft(name):
    d = str(OUTSIDE / "configs" / name)
    out = _result("sft", "params", d, "--lora-r", "8", "--targets", "all-linear")
    assert out["trainable_params"] == truth.peft_trainable(name, "all-linear")


def test_falcon_h1_runs_attention_and_mamba2_side_by_side():
    # 36 layers, each: K/V of 2 heads x 64 over the context (bf16) + a Mamba-2 state (24 heads x 64 x 128, fp32)
    # and conv state ((1536 + 2 x 128) x 4, bf16): 75,497,472 + 36 x 800,768 = 104,325,120 B at 4k
    assert truth.cache_bytes("falcon-h1-0.5b-instruct", 4096) == 36 * (2 * 2 * 64 * 4096 * 2 + 786_432 + 14_336)
    assert _figures("falcon-h1-0.5b-instruct")["kv"] == 104_325_120


def test_lfm2_mlp_width_is_transformers_adjusted_one():
    # Lfm2MLP: block_ff_dim 12288 -> int(2 * 12288 / 3) = 8192, x 1.0, rounded up to a multiple of 256 = 8192
    label = _result("sft", "params", str(OUTSIDE / "configs" / "lfm2-1.2b"))["layer_kinds"]
    assert {k["label"] for k in label} == {"short-conv 2048 x 3, dense MLP 8192", "gqa, dense MLP 8192"}


@pytest.mark.parametrize("name", ENCODER_DECODERS)
def test_encoder_decoder_families_against_the_meta_build(name):
    got = _figures(name)
    assert got["total"] == truth.total_params(name)
    assert got["kv"] == truth.encdec_cache_bytes(name, 4096)
    assert got["roofline_kv"] == truth.encdec_cache_bytes(name, 4096)
    assert got["decode_bytes"] == pytest.approx(truth.encdec_decode_weight_bytes(name), rel=BYTES_REL)
    d = str(OUTSIDE / "configs" / name)
    out = _result("sft", "params", d, "--lora-r", "8", "--targets", "all-linear")
    assert out["trainable_params"] == truth.peft_trainable(name, "all-linear")


@pytest.mark.parametrize("name", ["opus-mt-en-de", "pegasus-large"])
def test_frozen_sinusoidal_positions_are_named_when_counted_as_trainable(name):
    # transformers builds the sinusoidal tables with requires_grad False: a full fine-tune trains fewer
    # parameters than the total; expkit counts them trainable and says so
    assert truth.trainable_params(name) < truth.total_params(name)
    out = _result("mem", str(OUTSIDE / "configs" / name), "--mode", "train")
    if out["trainable_params"] != truth.trainable_params(name):
        assert any("sinusoidal position tables" in n for n in out["notes"])


def test_compressed_tensors_fp8_is_read_not_refused():
    name = "llama-3.1-8b-instruct-fp8-compressed"
    got = _figures(name)
    assert got["total"] == truth.total_params(name)
    assert got["weights"] == pytest.approx(truth.stored_weight_bytes(name), rel=BYTES_REL)
    assert "compressed-tensors float 8-bit weights" in got["notes"]


def test_compressed_tensors_with_two_weight_schemes_is_refused_naming_the_field(tmp_path):
    from typer.testing import CliRunner

    from expkit.cli.app import app

    raw = json.loads((OUTSIDE / "configs" / "llama-3.1-8b-instruct-fp8-compressed" / "config.json").read_text())
    groups = raw["quantization_config"]["config_groups"]
    groups["group_1"] = {**groups["group_0"], "weights": {**groups["group_0"]["weights"], "num_bits": 4}}
    (tmp_path / "config.json").write_text(json.dumps(raw))
    res = CliRunner().invoke(app, ["sft", "params", str(tmp_path), "--json"])
    assert res.exit_code == 2
    assert "config_groups has 2 different weight schemes" in json.loads(res.stdout)["error"]["message"]


def test_an_unregistered_type_with_an_up_down_mlp_is_read_from_transformers_layer(tmp_path):
    # Phi-2's layout (fc1/fc2, no gate) under no family module: the Llama-like family would count a gated MLP
    # (3 x hidden x inter, +33 % of the decode bytes here); transformers' one-layer meta build says 2 matrices
    import torch
    import transformers

    raw = {
        "model_type": "phi",
        "architectures": ["PhiForCausalLM"],
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 2,
        "num_attention_heads": 16,
        "vocab_size": 1000,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(raw))
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "architectures")}
    with torch.device("meta"):
        model = transformers.PhiForCausalLM(transformers.PhiConfig(**fields))
    embed = model.get_input_embeddings().weight
    truth_bytes = 2 * sum(p.numel() for p in model.parameters() if p is not embed)  # biases, norms in
    got = _result("roofline", "--model", str(tmp_path), "--gpu", "H100", "--batch", "1", "--context", "4096")
    assert got["weight_bytes"] == pytest.approx(truth_bytes, rel=BYTES_REL)  # was +33 % with a gated MLP


def test_ernie45_moe_reads_its_moe_fields():
    # added after the held-out score (tests/models/outside/README.md): moe_num_experts 64, moe_k 6, 2 shared
    # experts of 1536 (one MLP 3072 wide), layer 0 dense (moe_layer_start_index 1); decode bytes were -19.7 %
    name = "ernie-4.5-21b-a3b"
    got = _figures(name)
    assert got["total"] == truth.total_params(name)
    assert got["active"] == truth.active_params(name)
    assert got["kv"] == truth.cache_bytes(name, 4096)
    assert got["decode_bytes"] == pytest.approx(truth.decode_weight_bytes(name), rel=BYTES_REL)
    assert "moe_num_experts" not in got["notes"]
    kinds = {k["label"] for k in _result("sft", "params", str(OUTSIDE / "configs" / name))["layer_kinds"]}
    assert len(kinds) == 2  # the dense first layer and 27 MoE layers


def test_zamba2_shared_blocks_are_stored_once_and_cached_per_use():
    # added after the held-out score (tests/models/outside/README.md): 54 Mamba-2 layers, 9 of them hybrid (the
    # default layers_block_type: 6, 12, ..., 42, 47, 51), each applying one of 2 shared blocks. KV at 4k:
    # 9 x 2 x 32 kv heads x 160 (2 x 2560 / 32) x 4096 x 2 B = 754,974,720 + 54 Mamba-2 states (80 x 64 x 64
    # fp32 + (5120 + 2 x 64) x 4 bf16 = 1,352,704 B) = 828,020,736; was +447 %. Decode bytes were +169 %.
    name = "zamba2-2.7b"
    got = _figures(name)
    assert got["total"] == truth.total_params(name)
    kv = truth.cache_bytes(name, 4096)
    assert kv == 9 * 2 * 32 * 160 * 4096 * 2 + 54 * (80 * 64 * 64 * 4 + (5120 + 2 * 64) * 4 * 2)
    assert got["kv"] == kv
    assert got["roofline_kv"] == kv
    assert got["weights"] == 2 * truth.total_params(name)
    assert got["decode_bytes"] == pytest.approx(truth.decode_weight_bytes(name), rel=BYTES_REL)
    assert "not modeled" not in got["notes"]
    assert "apply shared weights stored by earlier layers" in got["notes"]
    assert got["active"] == truth.active_params(name)  # was +48 %: the shared blocks counted at every use
    d = str(OUTSIDE / "configs" / name)
    infer32 = _result("mem", d, "--mode", "infer", "--context", "32768")
    assert {ln["name"]: ln["bytes"] for ln in infer32["lines"]}["KV cache"] == truth.cache_bytes(name, 32768)
    # the description: shared weights once in the stored matmuls, every use in the FLOPs
    from expkit.models import load_model_description

    desc = load_model_description(d)
    embed = truth.meta_model(name).get_input_embeddings().weight
    stored = sum(p.numel() for n, p in truth.meta_model(name).named_parameters() if p.dim() == 2 and p is not embed)
    assert desc.linear_params() - desc.head_params == stored  # conv1d weights are 3-D: left out of both
    assert desc.active_linear_params() > desc.linear_params()  # 7 reuses of a block run its matmuls again
