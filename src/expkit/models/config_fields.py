"""Reading a config's fields: the bounds every number must keep, the fields that change no figure, transformers'
own config class (its defaults and derived fields), and the checks that name a bad field."""

from __future__ import annotations

import json
import warnings
from typing import Any

from expkit.errors import InputError, MissingDependency

__all__ = [
    "BOUNDS",
    "NEUTRAL",
    "NO_TRANSFORMERS",
    "REQUIRED",
    "attr",
    "check_values",
    "hf_text_config",
    "int_field",
    "per_layer_widths",
    "unmodelled",
]

# Sanity bounds: a value past these is a broken file, not a model (and would make the meta build hang).
BOUNDS = {
    "hidden_size": 2**20,
    "num_hidden_layers": 10_000,
    "num_attention_heads": 2**16,
    "num_key_value_heads": 2**16,
    "vocab_size": 2**27,
    "intermediate_size": 2**22,
    "head_dim": 2**16,
    "moe_intermediate_size": 2**22,
    "num_experts": 2**16,
    "num_local_experts": 2**16,  # 0 experts is refused: transformers builds an MoE block with none (no MLP)
    "n_routed_experts": 2**16,
    "kv_lora_rank": 2**20,
    "q_lora_rank": 2**20,
    "qk_rope_head_dim": 2**16,
    "qk_nope_head_dim": 2**16,
    "v_head_dim": 2**16,
}
REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")

# Fields that do not change parameter counts, memory or the roofline (or are read as attributes of the
# transformers config, e.g. layer_types): read and accepted without a note.
NEUTRAL = {
    "architectures",
    "model_type",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "use_cache",
    "_name_or_path",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "sep_token_id",
    "decoder_start_token_id",
    "image_token_id",
    "video_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "vision_token_id",
    "audio_token_id",
    "image_token_index",
    "boi_token_index",
    "eoi_token_index",
    "initializer_range",
    "rms_norm_eps",
    "layer_norm_eps",
    "norm_eps",
    "hidden_act",
    "hidden_activation",
    "attention_dropout",
    "hidden_dropout",
    "embd_pdrop",
    "resid_pdrop",
    "attn_pdrop",
    "dropout",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rope_interleave",
    "partial_rotary_factor",
    "max_position_embeddings",
    "original_max_position_embeddings",
    "pretraining_tp",
    "tie_word_embeddings",
    "attention_bias",
    "mlp_bias",
    "head_dim",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
    "layer_types",
    "sliding_window",
    "sliding_window_size",
    "use_sliding_window",
    "max_window_layers",
    "cache_implementation",
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "query_pre_attn_scalar",
    # encoder-decoder generation settings and the classification head (not built by the LM classes)
    "is_encoder_decoder",
    "max_length",
    "num_beams",
    "no_repeat_ngram_size",
    "early_stopping",
    "length_penalty",
    "min_length",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "begin_suppress_tokens",
    "suppress_tokens",
    "classif_dropout",
    "classifier_dropout",
    "gradient_checkpointing",
    # mixture-of-experts: modeled (counts, active, pattern) or routing rules that move no bytes
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "n_shared_experts",
    "shared_expert_intermediate_size",
    "first_k_dense_replace",
    "moe_layer_freq",
    "decoder_sparse_step",
    "mlp_only_layers",
    "norm_topk_prob",
    "output_router_logits",
    "router_aux_loss_coef",
    "aux_loss_alpha",
    "seq_aux",
    "routed_scaling_factor",
    "scoring_func",
    "topk_method",
    "n_group",
    "topk_group",
    "ep_size",
    "router_jitter_noise",
    # latent attention (modeled)
    "q_lora_rank",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "num_nextn_predict_layers",
    "num_mtp_layers",
    "quantization_config",
    "text_config",
    "vision_config",
    "audio_config",
    # Llama-4 (modeled: chunked layers, MoE interleave, dense width, shared expert; the rest scales queries or
    # is the weightless L2 q/k norm, moving no bytes)
    "attention_chunk_size",
    "no_rope_layers",
    "no_rope_layer_interval",
    "interleave_moe_layer_step",
    "moe_layers",
    "intermediate_size_mlp",
    "attn_scale",
    "attn_temperature_tuning",
    "floor_scale",
    "use_qk_norm",
    "for_llm_compressor",
    # hybrids (modeled): Jamba's layer pattern and Mamba mixer, Qwen3-Next's pattern and gated DeltaNet
    "attn_layer_offset",
    "attn_layer_period",
    "expert_layer_offset",
    "expert_layer_period",
    "mamba_d_conv",
    "mamba_d_state",
    "mamba_dt_rank",
    "mamba_expand",
    "mamba_conv_bias",
    "mamba_proj_bias",
    "use_mamba_kernels",
    "full_attention_interval",
    "linear_conv_kernel_dim",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_num_key_heads",
    "linear_num_value_heads",
}


def int_field(raw: dict[str, Any], key: str, source: str, *, default: int | None = None) -> int:
    value = raw.get(key, default)
    if value is None:
        raise InputError(f"missing key {key!r}", path=source, hint=f"a config.json needs {', '.join(REQUIRED)}")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(
            f"{key} must be a positive integer, got {value!r}", path=source, hint="fix the value in config.json"
        )
    bound = BOUNDS.get(key)
    if bound is not None and value > bound:
        raise InputError(
            f"{key} = {value:,} is beyond any real model (limit {bound:,})",
            path=source,
            hint="fix the value in config.json",
        )
    return value


def per_layer_widths(value: Any, num_layers: int, source: str) -> list[int] | None:
    """``intermediate_size`` given as one width per layer (Gemma-3n), checked; None when it is one number."""
    if not isinstance(value, list):
        return None
    if len(value) != num_layers:
        raise InputError(
            f"intermediate_size has {len(value)} entries for {num_layers} layers",
            path=source,
            hint="give one width per num_hidden_layers, or one number",
        )
    return [int_field({"intermediate_size": w}, "intermediate_size", source) for w in value]


NO_TRANSFORMERS = object()
"""What ``hf_text_config`` returns for a catalog entry in the light install: its own keys are read."""


def hf_text_config(raw: dict[str, Any], *, catalog: bool = False) -> Any | None:
    """transformers' config object for ``raw`` (its text part for multimodal models), None if unknown.

    Without transformers a user's config is refused (its defaults live in transformers), but a catalog entry is
    read from its own keys: each entry is written complete, and tests/models/test_catalog_light.py checks that
    every entry describes the same model with and without transformers (``NO_TRANSFORMERS`` is returned)."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        return None
    try:
        from transformers import AutoConfig
    except ImportError as exc:
        if catalog:
            return NO_TRANSFORMERS
        raise MissingDependency("reading a model config needs transformers", hint="pip install 'expkit[hf]'") from exc
    kwargs = {
        k: v
        for k, v in raw.items()
        if k not in ("model_type", "architectures", "transformers_version") and not k.startswith("_")
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cfg = AutoConfig.for_model(model_type, **kwargs)
        except ValueError as exc:
            if "Unrecognized model" in str(exc) or "model_type" in str(exc):
                return None
            raise InputError(f"transformers refuses this config: {exc}", path=None) from exc
        except (TypeError, KeyError) as exc:
            raise InputError(f"transformers refuses this config: {exc}") from exc
        except Exception as exc:  # huggingface_hub's StrictDataclass validation errors are plain Exceptions
            if type(exc).__name__.startswith("StrictDataclass"):
                cause = exc.__cause__ or exc
                raise InputError(f"transformers refuses this config: {cause}") from exc
            raise
    return cfg


def attr(cfg: Any, raw: dict[str, Any], *names: str) -> Any:
    for n in names:
        v = getattr(cfg, n, None) if cfg is not None else None
        if v is None:
            v = raw.get(n)
        if v is not None:
            return v
    return None


def check_values(
    text_raw: dict[str, Any], source: str, *, required: bool, attention_free: bool = False, zero_ok: bool = False
) -> None:
    """Every number the description reads is a positive integer within bounds, and heads divide evenly;
    ``required``: the fields without which nothing can be counted are present (checked once transformers'
    defaults are filled in); ``attention_free``: the family needs no attention heads (Mamba-2);
    ``zero_ok``: 0 routed experts means a dense model in this family (Granite-4.0-H), else it is refused."""
    if required:
        for key in REQUIRED:
            if attention_free and key == "num_attention_heads":
                continue
            if key not in text_raw:
                raise InputError(f"missing key {key!r}", path=source, hint=f"a config.json needs {', '.join(REQUIRED)}")
    for key in REQUIRED:
        if key in text_raw and text_raw[key] is None:
            raise InputError(f"{key} is null", path=source, hint=f"give {key} as a positive integer in config.json")
    for key in BOUNDS:
        if zero_ok and key in ("num_local_experts", "num_experts", "n_routed_experts") and text_raw.get(key) == 0:
            continue
        if key == "intermediate_size" and isinstance(text_raw.get(key), list):
            per_layer_widths(text_raw[key], len(text_raw[key]), source)
        elif key in text_raw and text_raw[key] is not None:
            int_field(text_raw, key, source)
    if "num_attention_heads" not in text_raw or "hidden_size" not in text_raw:
        return
    heads, hidden = int(text_raw["num_attention_heads"]), int(text_raw["hidden_size"])
    if text_raw.get("head_dim") is None and hidden % heads:
        raise InputError(
            f"hidden_size {hidden} is not divisible by num_attention_heads {heads} and there is no head_dim",
            path=source,
            hint="fix hidden_size or num_attention_heads, or add head_dim",
        )
    kv_heads = int(text_raw.get("num_key_value_heads") or heads)
    if heads % kv_heads:
        raise InputError(
            f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}",
            path=source,
            hint="fix num_key_value_heads in config.json",
        )


def unmodelled(fields: dict[str, Any], where: str) -> list[str]:
    """A note for each field that may change a figure and is not modelled (``where``: its place)."""
    from expkit.models.families import modeled_fields  # the families import this module

    modeled = modeled_fields()
    notes = []
    for k in sorted(fields):
        if k in NEUTRAL or k in modeled or k.endswith("_token_id") or k in ("auto_map", "architectures"):
            continue
        if k.startswith("_"):
            continue
        notes.append(f"config field {where}{k!r} = {json.dumps(fields[k])[:40]} is not modeled (ignored)")
    return notes
