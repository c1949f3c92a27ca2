"""Truths for the published configs in ``configs/``, computed without expkit (issue 19 item 3).

Each function here uses transformers (its config classes, its models built on the meta device, its cache
classes) and arithmetic written out below; none imports expkit. The tests compare these with what expkit
prints.
"""

from __future__ import annotations

import functools
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

CONFIGS = Path(__file__).with_name("configs")
TOWER_PREFIXES = ("vision_model", "vision_tower", "multi_modal_projector", "model.vision_tower", "model.multi_modal")
KV_DTYPE = torch.bfloat16  # the cache dtype of a bf16/fp16 checkpoint (2 bytes), what expkit's ledger assumes


def raw_config(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name / "config.json").read_text())


@functools.cache
def hf_config(name: str) -> Any:
    """transformers' config object for ``configs/<name>/config.json`` (quantization_config dropped: it only
    says how the stored weights are packed, see ``decode_weight_bytes``)."""
    from transformers import AutoConfig

    raw = raw_config(name)
    model_type = raw.pop("model_type")
    for key in ("architectures", "transformers_version", "quantization_config", "_name_or_path"):
        raw.pop(key, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoConfig.for_model(model_type, **raw)


@functools.cache
def meta_model(name: str) -> Any:
    """The class named in ``architectures``, built at full size on the meta device (shapes, no weights)."""
    import transformers

    cls = getattr(transformers, raw_config(name)["architectures"][0])
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        return cls(hf_config(name))


def is_tower(param_name: str) -> bool:
    return param_name.startswith(TOWER_PREFIXES)


@dataclass(frozen=True)
class Routing:
    """A MoE layout written by hand from the config: ``moe_layers`` layers of ``experts`` routed experts of
    ``params_per_expert`` parameters each, ``top_k`` per token."""

    moe_layers: int
    experts: int
    top_k: int
    params_per_expert: int

    @property
    def routed_params(self) -> int:
        return self.moe_layers * self.experts * self.params_per_expert


def routing(name: str) -> Routing | None:
    """The routed experts of each MoE fixture, from the config numbers (gate, up, down; gpt-oss adds biases)."""
    c = raw_config(name)
    t = c.get("text_config", c)
    if name == "gpt-oss-20b":
        # gate_up (hidden x 2 inter) + bias 2 inter, down (inter x hidden) + bias hidden; every layer is MoE
        h, i = t["hidden_size"], t["intermediate_size"]
        return Routing(t["num_hidden_layers"], t["num_local_experts"], t["num_experts_per_tok"], 3 * h * i + 2 * i + h)
    if name == "llama-4-scout-17b-16e":
        # interleave_moe_layer_step 1: every layer MoE; the shared expert is not routed
        h, i = t["hidden_size"], t["intermediate_size"]
        n = t["num_hidden_layers"] // t["interleave_moe_layer_step"]
        return Routing(n, t["num_local_experts"], t["num_experts_per_tok"], 3 * h * i)
    if name == "jamba-v0.1":
        # MoE on layers offset, offset + period, ... (expert_layer_offset 1, period 2: 16 of 32)
        h, i = t["hidden_size"], t["intermediate_size"]
        n = len(range(t["expert_layer_offset"], t["num_hidden_layers"], t["expert_layer_period"]))
        return Routing(n, t["num_experts"], t["num_experts_per_tok"], 3 * h * i)
    if name == "granite-4.0-h-small":
        # every layer: shared MLP (not routed) + num_local_experts experts of intermediate_size (input_linear
        # 2 inter x hidden, output_linear hidden x inter)
        h, i = t["hidden_size"], t["intermediate_size"]
        return Routing(t["num_hidden_layers"], t["num_local_experts"], t["num_experts_per_tok"], 3 * h * i)
    if name == "deepseek-v3.2-exp":
        # first_k_dense_replace 3 dense layers, then every layer MoE (transformers ignores moe_layer_freq)
        h, i = t["hidden_size"], t["moe_intermediate_size"]
        n = t["num_hidden_layers"] - t["first_k_dense_replace"]
        return Routing(n, t["n_routed_experts"], t["num_experts_per_tok"], 3 * h * i)
    if name == "qwen3-next-80b-a3b-instruct":
        # decoder_sparse_step 1, no mlp_only_layers: every layer MoE; the shared expert is not routed
        h, i = t["hidden_size"], t["moe_intermediate_size"]
        return Routing(t["num_hidden_layers"], t["num_experts"], t["num_experts_per_tok"], 3 * h * i)
    return None


def routed_params_in_model(name: str) -> int:
    """Parameters under a module called ``experts`` in the meta model (to check ``routing`` by hand)."""
    return sum(p.numel() for n, p in meta_model(name).named_parameters() if "experts" in n.split("."))


def total_params(name: str) -> int:
    return sum(p.numel() for p in meta_model(name).parameters())  # parameters() counts a tied weight once


def active_params(name: str) -> int:
    """Weights one text token multiplies by: the text model without its input embedding (a row lookup),
    with the output head (even when tied), and with top_k / E of the routed experts (the routing formula:
    attention + shared experts + router + top_k routed experts). Towers are left out."""
    model = meta_model(name)
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    text = sum(p.numel() for n, p in model.named_parameters() if not is_tower(n) and p is not embed and p is not head)
    r = routing(name)
    routed_off = 0 if r is None else r.routed_params * (r.experts - r.top_k) // r.experts
    return text - routed_off + head.numel()


# --- storage bytes per parameter, by hand from each format's tensor layout --------------------------------
# AWQ (GEMM, zero_point, 4-bit, group 128): qweight int32 (in, out/8) = 4 bits per weight; scales fp16
# (in/128, out); qzeros int32 (in/128, out/8) = 4 bits per group and output. AutoAWQ's WQLinear_GEMM.
# GPTQ (4-bit, group 128): qweight int32 (in/8, out), qzeros int32 (in/128, out/8), scales fp16 (in/128, out),
# g_idx int32 (in,). AutoGPTQ / optimum QuantLinear.
# MXFP4 (gpt-oss): each expert weight in blocks of 32 values, 4 bits each (16 bytes) + one uint8 E8M0 scale:
# 4.25 bits per weight (OCP Microscaling Formats v1.0; transformers' Mxfp4 `*_blocks`, `*_scales`).
# Everything else (embeddings, output head, norms, biases, router, attention of gpt-oss): 16-bit.


def _linear_bytes(fmt: str, in_f: int, out_f: int, bits: int = 4, group: int = 128) -> float:
    groups = in_f // group
    if fmt == "awq":
        return in_f * out_f * bits / 8 + groups * out_f * 2 + groups * out_f * bits / 8
    if fmt == "gptq":
        return in_f * out_f * bits / 8 + groups * out_f * bits / 8 + groups * out_f * 2 + in_f * 4
    raise ValueError(fmt)


def _param_bytes(name: str) -> dict[str, float]:
    """Stored bytes of every parameter of the meta model (by parameter name) under the checkpoint's format."""
    model = meta_model(name)
    quant = (raw_config(name).get("quantization_config") or {}).get("quant_method")
    out: dict[str, float] = {n: 2.0 * p.numel() for n, p in model.named_parameters()}
    if quant in ("awq", "gptq"):
        for mod_name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear) and ".layers." in f".{mod_name}":
                out[f"{mod_name}.weight"] = _linear_bytes(quant, mod.in_features, mod.out_features)
    elif quant == "mxfp4":
        for n, p in model.named_parameters():
            if n.endswith(("experts.gate_up_proj", "experts.down_proj")):
                out[n] = p.numel() * 4 / 8 + p.numel() / 32
    return out


def stored_weight_bytes(name: str) -> float:
    """Bytes of the whole checkpoint's weights in its stored format (towers included)."""
    return sum(_param_bytes(name).values())


def decode_weight_bytes(name: str) -> float:
    """Weight bytes one decode step at batch 1 reads: the text model's parameters at their stored bytes, the
    routed experts at top_k / E (one token reaches k experts per MoE layer), the output head in full, the
    input embedding not at all (one row). Norms and biases are in (they are read); they are < 0.1 %."""
    model = meta_model(name)
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    sizes = _param_bytes(name)
    r = routing(name)
    total = 0.0
    for n, p in model.named_parameters():
        if is_tower(n) or p is embed or p is head:
            continue
        share = r.top_k / r.experts if r is not None and "experts" in n.split(".") else 1.0
        total += sizes[n] * share
    return total + 2.0 * head.numel()


# --- cache bytes from transformers' own cache classes ---------------------------------------------------


def _attention_kv_shape(text: Any) -> tuple[int, int]:
    """(kv heads, head dim) of a full/sliding attention layer, from the config."""
    heads = text.num_attention_heads
    kv = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    return kv, head_dim


def _linear_mixer(model: Any, layer_idx: int) -> Any:
    layer = (model.model if hasattr(model, "model") else model.backbone).layers[layer_idx]  # Mamba-2: backbone
    for attr in ("mamba", "linear_attn", "mixer"):
        if hasattr(layer, attr):
            return getattr(layer, attr)
    raise LookupError(f"layer {layer_idx} of {type(model).__name__} has no mamba / linear_attn mixer")


@functools.cache
def cache_bytes(name: str, context: int) -> int:
    """Bytes transformers' cache holds for one sequence after ``context`` tokens, bf16 activations.

    The cache is ``DynamicCache(config=...)``, the one ``generate`` makes for these models: it picks per
    layer a full layer, a sliding-window layer (sliding and chunked attention: it keeps the last window - 1
    tokens) or a linear-attention layer (Mamba / gated DeltaNet: a conv state and a recurrent state).
    Attention layers are filled with meta K and V of ``context`` tokens; linear-attention layers get their
    state from the model's own mixer run on the meta device over 8 tokens (the state does not grow).
    """
    from transformers import DynamicCache
    from transformers.cache_utils import LinearAttentionCacheLayerMixin

    cfg = hf_config(name)
    text = cfg.get_text_config(decoder=True)
    cache = DynamicCache(config=cfg)
    model = None
    for i, layer in enumerate(cache.layers):
        if isinstance(layer, LinearAttentionCacheLayerMixin):
            if model is None:
                model = meta_model(name).to(KV_DTYPE)  # mixers compute their state in the activations' dtype
            x = torch.empty(1, 8, text.hidden_size, dtype=KV_DTYPE, device="meta")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _linear_mixer(model, i)(x, cache=cache)
        else:
            kv, head_dim = _attention_kv_shape(text)
            k = torch.empty(1, kv, context, head_dim, dtype=KV_DTYPE, device="meta")
            layer.update(k, k.clone())
    return _held_bytes(cache)


def _held_bytes(cache: Any) -> int:
    total = 0
    for layer in cache.layers:
        for attr in ("keys", "values", "indexer_keys"):
            t = getattr(layer, attr, None)
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
        for attr in ("conv_states", "recurrent_states"):
            for t in (getattr(layer, attr, None) or {}).values():
                if isinstance(t, torch.Tensor):
                    total += t.numel() * t.element_size()
    return total


def whisper_cache_bytes(name: str, decoder_tokens: int) -> int:
    """transformers' EncoderDecoderCache of a Whisper decoder after ``decoder_tokens`` tokens: self-attention
    K, V over the decoder tokens plus cross-attention K, V over the encoder's ``max_source_positions``
    frames (1500 for 30 s of audio), per decoder layer."""
    from transformers import DynamicCache, EncoderDecoderCache

    cfg = hf_config(name)
    heads = cfg.decoder_attention_heads
    head_dim = cfg.d_model // heads
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    for i in range(cfg.decoder_layers):
        k = torch.empty(1, heads, decoder_tokens, head_dim, dtype=KV_DTYPE, device="meta")
        cache.self_attention_cache.update(k, k.clone(), i)
        x = torch.empty(1, heads, cfg.max_source_positions, head_dim, dtype=KV_DTYPE, device="meta")
        cache.cross_attention_cache.update(x, x.clone(), i)
    return _held_bytes(cache.self_attention_cache) + _held_bytes(cache.cross_attention_cache)


# --- encoder-decoder models (T5, BART, Whisper) -------------------------------------------------------------


def encdec_shape(name: str) -> tuple[int, int, int, int]:
    """(decoder layers, decoder heads, head dim, encoder positions or 0 for a text encoder), from the config
    as each family's modeling code reads it (T5: num_heads x d_kv; BART, Whisper: d_model / heads)."""
    cfg = hf_config(name)
    if cfg.model_type == "t5":
        return cfg.num_decoder_layers, cfg.num_heads, cfg.d_kv, 0
    heads = cfg.decoder_attention_heads
    return cfg.decoder_layers, heads, cfg.d_model // heads, getattr(cfg, "max_source_positions", 0)


def encdec_cache_bytes(name: str, decoder_tokens: int, encoder_tokens: int) -> int:
    """transformers' EncoderDecoderCache after ``decoder_tokens`` decoder tokens over ``encoder_tokens``
    encoder outputs: per decoder layer self-attention K, V over the decoder tokens and cross-attention K, V
    over the encoder's outputs (bf16)."""
    from transformers import DynamicCache, EncoderDecoderCache

    layers, heads, head_dim, _ = encdec_shape(name)
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    for i in range(layers):
        k = torch.empty(1, heads, decoder_tokens, head_dim, dtype=KV_DTYPE, device="meta")
        cache.self_attention_cache.update(k, k.clone(), i)
        x = torch.empty(1, heads, encoder_tokens, head_dim, dtype=KV_DTYPE, device="meta")
        cache.cross_attention_cache.update(x, x.clone(), i)
    return _held_bytes(cache.self_attention_cache) + _held_bytes(cache.cross_attention_cache)


CROSS_KV = ("encoder_attn.k_proj", "encoder_attn.v_proj", "EncDecAttention.k", "EncDecAttention.v")


def encdec_active_params(name: str) -> int:
    """Every parameter but the input embedding (a row lookup), with the output head when the class has one
    (counted even when tied): no routing in these models."""
    model = meta_model(name)
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    return total_params(name) - embed.numel() + (0 if head is None else head.weight.numel())


def encdec_decode_weight_bytes(name: str) -> float:
    """Weight bytes one decode step at batch 1 reads (bf16): the decoder stack's parameters (norms and biases
    in) except the cross-attention k and v projections (transformers applies them once, to the encoder output,
    and caches the result), the decoder's final norm, and the LM head vocab x d_model. Embedding rows and
    position rows are lookups, left out; the encoder does not run."""
    return decoder_step_weight_bytes(meta_model(name), hf_config(name))


def decoder_step_weight_bytes(model: Any, cfg: Any) -> float:
    """``encdec_decode_weight_bytes`` of a built meta ``model`` and its config (the outside batch's truths call
    it with their own)."""
    total = 0
    for n, p in model.named_parameters():
        parts = n.split(".")
        if "decoder" not in parts or "embed_tokens" in parts or "embed_positions" in parts:
            continue
        if any(c in n for c in CROSS_KV):
            continue
        total += p.numel()
    return 2.0 * (total + cfg.vocab_size * cfg.d_model)


def peft_trainable(name: str, r: int, targets: Any) -> int:
    """Trainable parameters of real peft's LoRA on the full meta model (``targets``: a list, ``all-linear``,
    or None for peft's default for the model type)."""
    from peft import LoraConfig, get_peft_model

    model = meta_model.__wrapped__(name)  # a fresh build: peft modifies the model in place
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = get_peft_model(model, LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets))
    return peft_model.get_nb_trainable_parameters()[0]


def indexed_mla_cache_bytes(name: str, context: int) -> int:
    """transformers' DynamicCache of a DeepSeek-V3.2 config after ``context`` tokens: each layer is a
    ``DynamicIndexedLayer`` holding the MLA latent and rotary key (what ``DeepseekV32Attention`` passes to
    ``cache.update``: [1, 1, T, kv_lora_rank] and [1, 1, T, qk_rope_head_dim]) and the indexer's keys
    (``update_indexer``: [1, T, index_head_dim]), bf16."""
    from transformers import DynamicCache

    cfg = hf_config(name)
    cache = DynamicCache(config=cfg)
    for layer in cache.layers:
        latent = torch.empty(1, 1, context, cfg.kv_lora_rank, dtype=KV_DTYPE, device="meta")
        rope = torch.empty(1, 1, context, cfg.qk_rope_head_dim, dtype=KV_DTYPE, device="meta")
        layer.update(latent, rope)
        layer.update_indexer(torch.empty(1, context, cfg.index_head_dim, dtype=KV_DTYPE, device="meta"))
    return _held_bytes(cache)
