"""Truths for the outside batch (``configs/``), computed without expkit.

Every figure comes from transformers and peft: the class ``architectures`` names (or the Auto class of the
config's ``model_type``) built on the meta device for parameter counts, ``get_peft_model`` for LoRA counts,
transformers' cache classes filled on the meta device for cache bytes, and the storage arithmetic of
``tests/models/published/published_truths.py`` (AWQ, GPTQ, MXFP4 layouts; FP8 blocks below) for stored and
decode-read bytes. A renamed copy (``renamed.json``) takes the truth of the config it was copied from: the
model it describes is that one, whatever it is called. Nothing here imports expkit.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).parent
CONFIGS = HERE / "configs"
sys.path.insert(0, str(HERE.parent / "published"))

from published_truths import (  # noqa: E402  (the published truths' helpers, reused as they are)
    KV_DTYPE,
    _held_bytes,
    _linear_bytes,
    decoder_step_weight_bytes,
)

TOWER_PARTS = {"vision_model", "vision_tower", "multi_modal_projector", "audio_tower"}


def is_tower(param_name: str) -> bool:
    """A parameter of a vision or audio tower (or its projector), wherever the class nests it (Mllama:
    ``model.vision_model.*``, LLaVA: ``model.vision_tower.*``)."""
    return not TOWER_PARTS.isdisjoint(param_name.split("."))


RENAMED: dict[str, str] = json.loads((HERE / "renamed.json").read_text())
EXPERT_COUNT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_FIELDS = ("num_experts_per_tok", "moe_k", "moe_top_k", "top_k")


def truth_name(name: str) -> str:
    """The config whose model ``name`` is: itself, or the one a renamed copy was made from."""
    return RENAMED.get(name, name)


def raw_config(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / truth_name(name) / "config.json").read_text())


@functools.cache
def hf_config(name: str) -> Any:
    """transformers' config object (quantization_config dropped: it says how stored weights are packed)."""
    from transformers import AutoConfig

    raw = raw_config(name)
    model_type = raw.pop("model_type")
    for key in ("architectures", "transformers_version", "quantization_config", "_name_or_path"):
        raw.pop(key, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoConfig.for_model(model_type, **raw)


def is_encoder_decoder(name: str) -> bool:
    return bool(getattr(hf_config(name), "is_encoder_decoder", False))


def build_meta(name: str) -> Any:
    """The class named in ``architectures``, built at full size on the meta device."""
    import transformers

    cls = getattr(transformers, raw_config(name)["architectures"][0])
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        return cls(hf_config(name))


meta_model = functools.cache(build_meta)


def total_params(name: str) -> int:
    return sum(p.numel() for p in meta_model(name).parameters())  # a tied weight once


def trainable_params(name: str) -> int:
    return sum(p.numel() for p in meta_model(name).parameters() if p.requires_grad)


def _text_config(name: str) -> Any:
    return hf_config(name).get_text_config(decoder=True)


def _moe_numbers(name: str) -> tuple[int, int] | None:
    """(experts, top_k) of a mixture-of-experts config (DBRX keeps them under ``ffn_config``)."""
    text = _text_config(name)
    holders = [text, getattr(text, "ffn_config", None)]
    found = [
        (f, getattr(h, f))
        for h in holders
        if h is not None
        for f in (*EXPERT_COUNT_FIELDS, *TOP_K_FIELDS)
        if hasattr(h, f)
    ]
    experts = next((v for f, v in found if f in EXPERT_COUNT_FIELDS and v), None)
    top_k = next((v for f, v in found if f in TOP_K_FIELDS and v), None)
    if isinstance(experts, int) and experts > 1 and isinstance(top_k, int):
        return experts, top_k
    return None


def _is_routed(param_name: str) -> bool:
    """A routed expert's weight: under a module called ``experts`` (shared experts are named otherwise)."""
    parts = param_name.split(".")
    return "experts" in parts or "input_linear" in parts or "output_linear" in parts  # GraniteMoe's experts


def routed_params(name: str) -> int:
    return sum(p.numel() for n, p in meta_model(name).named_parameters() if _is_routed(n))


def active_params(name: str) -> int | None:
    """Weights one text token multiplies by: the model without its input embedding (a row lookup) and towers,
    with the output head (even when tied), the routed experts at top_k / E. None for an encoder-decoder
    (``published_truths.encdec_active_params`` is the rule there) when the routing cannot be read."""
    model = meta_model(name)
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    head_w = None if head is None else head.weight
    text = sum(p.numel() for n, p in model.named_parameters() if not is_tower(n) and p is not embed and p is not head_w)
    moe = _moe_numbers(name)
    routed = routed_params(name)
    if moe is not None and routed == 0:
        return None
    off = 0 if moe is None else routed * (moe[0] - moe[1]) // moe[0]
    return text - off + (0 if head_w is None else head_w.numel())


def peft_trainable(name: str, targets: Any) -> int:
    """Trainable parameters of peft's LoRA r=8 on a fresh meta build (``targets``: 'all-linear' or a list)."""
    from peft import LoraConfig, get_peft_model

    model = build_meta(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=targets))
    return int(peft_model.get_nb_trainable_parameters()[0])


def peft_default_targets(name: str) -> list[str] | None:
    """peft's default LoRA targets for the model's type (None when peft has none)."""
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as DEFAULTS

    targets = DEFAULTS.get(hf_config(name).model_type)
    return list(targets) if targets else None


# --- cache bytes ------------------------------------------------------------------------------------------


def _kv_shape(text: Any) -> tuple[int, int]:
    heads = getattr(text, "num_attention_heads", None) or text.n_heads
    kv = getattr(text, "num_key_value_heads", None) or heads
    attn = getattr(text, "attn_config", None)  # DBRX
    if attn is not None and getattr(attn, "kv_n_heads", None):
        kv = attn.kv_n_heads
    hidden = getattr(text, "hidden_size", None) or text.d_model
    head_dim = getattr(text, "head_dim", None) or hidden // heads
    return kv, head_dim


def _linear_mixer(model: Any, layer_idx: int) -> Any:
    """The recurrent mixer of layer ``layer_idx``: Mamba / gated DeltaNet / LFM2's short convolution."""
    layer = (model.model if hasattr(model, "model") else model.backbone).layers[layer_idx]
    for name in ("mamba", "linear_attn", "mixer", "conv"):
        if hasattr(layer, name):
            return getattr(layer, name)
    for _, module in layer.named_modules():  # Zamba2's hybrid layer: mamba_decoder.mamba
        if type(module).__name__.endswith("Mixer"):
            return module
    raise LookupError(f"layer {layer_idx} of {type(model).__name__} has no mamba / linear_attn / conv mixer")


def cache_bytes(name: str, context: int) -> int:
    """Bytes transformers' ``DynamicCache(config=...)`` holds for one sequence after ``context`` tokens (bf16):
    full layers all tokens, sliding layers window - 1, linear-attention layers (Mamba, LFM2's convolution) the
    state their own mixer writes on the meta device, and a layer that holds both (Falcon-H1's
    ``LinearAttentionAndFullAttentionLayer``) both. Latent attention (DeepSeek-V2/V3) caches what its attention
    passes to ``cache.update``: the latent [1, 1, T, kv_lora_rank] and the rotary key [1, 1, T, qk_rope_head_dim]
    (transformers 5.25 ``DeepseekV2Attention.forward``)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer, LinearAttentionCacheLayerMixin

    cfg = hf_config(name)
    text = cfg.get_text_config(decoder=True)
    cache = DynamicCache(config=cfg)
    model = None
    kv, head_dim = _kv_shape(text)
    k_shape, v_shape = (1, kv, context, head_dim), (1, kv, context, head_dim)
    if getattr(text, "kv_lora_rank", None):
        k_shape, v_shape = (1, 1, context, text.kv_lora_rank), (1, 1, context, text.qk_rope_head_dim)
    for i, layer in enumerate(cache.layers):
        if isinstance(layer, LinearAttentionCacheLayerMixin):
            if model is None:
                model = meta_model(name).to(KV_DTYPE)
            x = torch.empty(1, 8, text.hidden_size, dtype=KV_DTYPE, device="meta")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _linear_mixer(model, i)(x, cache=cache)
        if isinstance(layer, DynamicLayer):
            k = torch.empty(*k_shape, dtype=KV_DTYPE, device="meta")
            layer.update(k, torch.empty(*v_shape, dtype=KV_DTYPE, device="meta"))
    return _held_bytes(cache)


def encdec_cache_bytes(name: str, context: int) -> int:
    """transformers' EncoderDecoderCache after ``context`` decoder tokens over ``context`` encoder tokens."""
    from transformers import DynamicCache, EncoderDecoderCache

    cfg = hf_config(name)
    if hasattr(cfg, "d_kv"):  # T5 family: num_heads x d_kv
        layers, heads, head_dim = cfg.num_decoder_layers, cfg.num_heads, cfg.d_kv
    else:
        layers, heads = cfg.decoder_layers, cfg.decoder_attention_heads
        head_dim = cfg.d_model // heads
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    for i in range(layers):
        k = torch.empty(1, heads, context, head_dim, dtype=KV_DTYPE, device="meta")
        cache.self_attention_cache.update(k, k.clone(), i)
        cache.cross_attention_cache.update(k.clone(), k.clone(), i)
    return _held_bytes(cache.self_attention_cache) + _held_bytes(cache.cross_attention_cache)


# --- stored and decode-read bytes -------------------------------------------------------------------------

# FP8 with weight_block_size (b0, b1): each layer Linear's weight at 1 byte + one fp32 ``weight_scale_inv`` per
# block (transformers' FP8Linear: scale shape (ceil(out/b0), ceil(in/b1))); everything else 16-bit.


def _param_bytes(name: str) -> dict[str, float] | None:
    """Stored bytes of every parameter under the checkpoint's format; None for a format without a truth here."""
    model = meta_model(name)
    quant = raw_config(name).get("quantization_config") or {}
    method = quant.get("quant_method")
    out: dict[str, float] = {n: 2.0 * p.numel() for n, p in model.named_parameters()}
    if method in ("awq", "gptq"):
        for mod_name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear) and ".layers." in f".{mod_name}":
                out[f"{mod_name}.weight"] = _linear_bytes(method, mod.in_features, mod.out_features)
    elif method == "fp8":
        b0, b1 = quant.get("weight_block_size") or (0, 0)
        for mod_name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear) and ".layers." in f".{mod_name}":
                o, i = mod.out_features, mod.in_features
                scales = -(-o // b0) * -(-i // b1) if b0 else 1
                out[f"{mod_name}.weight"] = o * i + 4.0 * scales
    elif method == "compressed-tensors":
        # llm-compressor's channel/tensor strategies: each layer Linear's weight at num_bits + its
        # ``weight_scale`` of one 16-bit value per output channel (per tensor: one value)
        weights = next(iter(quant["config_groups"].values()))["weights"]
        if weights.get("strategy") not in ("channel", "tensor"):
            return None
        for mod_name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear) and ".layers." in f".{mod_name}":
                o, i = mod.out_features, mod.in_features
                scales = o if weights["strategy"] == "channel" else 1
                out[f"{mod_name}.weight"] = o * i * weights["num_bits"] / 8 + 2.0 * scales
    elif method:
        return None
    return out


def stored_weight_bytes(name: str) -> float | None:
    sizes = _param_bytes(name)
    return None if sizes is None else sum(sizes.values())


def decode_weight_bytes(name: str) -> float | None:
    """Weight bytes one decode step at batch 1 reads: text parameters at their stored bytes, routed experts at
    top_k / E, the output head in full, the input embedding not at all; towers left out. Decoders only."""
    if is_encoder_decoder(name):
        return None
    model = meta_model(name)
    sizes = _param_bytes(name)
    if sizes is None:
        return None
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    moe = _moe_numbers(name)
    total = 0.0
    for n, p in model.named_parameters():
        if is_tower(n) or p is embed or p is head:
            continue
        share = moe[1] / moe[0] if moe is not None and _is_routed(n) else 1.0
        total += sizes[n] * share
    return total + 2.0 * head.numel()


def encdec_decode_weight_bytes(name: str) -> float:
    """As ``published_truths.encdec_decode_weight_bytes``: the decoder stack without cross k/v and embeddings,
    plus the head vocab x d_model, bf16."""
    return decoder_step_weight_bytes(meta_model(name), hf_config(name))
