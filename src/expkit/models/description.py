"""One model description read from ``config.json``: every layer's attention and MLP, towers, weight bits.

Read through transformers' own config class when it knows the ``model_type`` (so defaults and derived
fields, such as Gemma-2's alternating ``layer_types``, are transformers'), else from the raw numbers with a
Llama-style block assumed and said so. Every config field is either modeled, known not to change counts,
memory or speed (token ids, initialisation, rope constants, routing rules), or listed in
``approximations``: nothing is dropped silently.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expkit.errors import InputError, MissingDependency, UsageError

__all__ = [
    "CATALOG_DIR",
    "AttentionSpec",
    "LayerSpec",
    "MlpSpec",
    "ModelDescription",
    "catalog_names",
    "describe_config",
    "load_model_description",
    "read_model_config",
]

CATALOG_DIR = Path(__file__).with_name("catalog")
MAX_CONFIG_BYTES = 4 * 2**20  # a real config.json is a few KiB; 4 MiB is refused before parsing
# Sanity bounds: a value past these is a broken file, not a model (and would make the meta build hang).
_BOUNDS = {
    "hidden_size": 2**20,
    "num_hidden_layers": 10_000,
    "num_attention_heads": 2**16,
    "num_key_value_heads": 2**16,
    "vocab_size": 2**27,
    "intermediate_size": 2**22,
    "head_dim": 2**16,
    "moe_intermediate_size": 2**22,
    "num_experts": 2**16,
    "kv_lora_rank": 2**20,
    "q_lora_rank": 2**20,
    "qk_rope_head_dim": 2**16,
    "qk_nope_head_dim": 2**16,
    "v_head_dim": 2**16,
}
_REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")

# Fields that do not change parameter counts, memory or the roofline (or are read as attributes of the
# transformers config, e.g. layer_types): read and accepted without a note.
_NEUTRAL = {
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
}
_TOWER_KEYS = ("vision_config", "audio_config", "speech_config")
_MLA_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2")


@dataclass(frozen=True)
class AttentionSpec:
    """One layer's attention. ``kind``: ``mha`` (kv heads = heads), ``gqa``, ``mqa`` (one kv head) or ``mla``
    (DeepSeek's multi-head latent attention: K and V rebuilt from a ``kv_lora_rank`` latent, plus a
    ``qk_rope_head_dim`` rotary key shared by all heads). ``window``: a sliding window in tokens, None = full."""

    kind: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    window: int | None = None
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None

    @property
    def kv_cache_elements_per_token(self) -> int:
        """Cached elements per token in this layer: 2 * kv_heads * head_dim (K and V); MLA caches the latent
        and the rotary key, kv_lora_rank + qk_rope_head_dim (the form DeepSeek serves and transformers 5
        stores: ``cache.update(kv_nope, k_rot)`` before ``kv_b_proj`` expands them)."""
        if self.kind == "mla":
            return int(self.kv_lora_rank or 0) + int(self.qk_rope_head_dim or 0)
        return self.num_kv_heads * (self.head_dim + self.v_head_dim)

    def cached_tokens(self, context: int) -> int:
        """Tokens this layer keeps (and reads) at ``context``: a sliding window caps them."""
        return context if self.window is None else min(context, self.window)


@dataclass(frozen=True)
class MlpSpec:
    """One layer's MLP: ``dense`` (gated, width ``intermediate_size``) or ``moe``: ``num_experts`` routed
    experts of width ``expert_intermediate_size``, ``top_k`` per token, plus shared experts that every token
    goes through (``shared_intermediate_size`` in total, 0 if none)."""

    kind: str
    intermediate_size: int
    num_experts: int = 0
    top_k: int = 0
    expert_intermediate_size: int = 0
    shared_intermediate_size: int = 0


@dataclass(frozen=True)
class LayerSpec:
    """One decoder layer: its attention and its MLP."""

    attention: AttentionSpec
    mlp: MlpSpec

    @property
    def label(self) -> str:
        a = self.attention
        att = a.kind + (f" window {a.window}" if a.window else "")
        if self.mlp.kind == "moe":
            m = self.mlp
            mlp = f"MoE {m.num_experts} experts top-{m.top_k} width {m.expert_intermediate_size}" + (
                f" + shared {m.shared_intermediate_size}" if m.shared_intermediate_size else ""
            )
        else:
            mlp = f"dense MLP {self.mlp.intermediate_size}"
        return f"{att}, {mlp}"


@dataclass(frozen=True)
class ModelDescription:
    """A model's config as the tools use it. ``layers`` has one LayerSpec per decoder layer.

    ``towers`` names the non-text encoders (``vision_config`` ...), whose parameters count in the total.
    ``weight_bits`` is 16 unless ``quantization_config`` says otherwise (``quant_method``).
    ``approximations`` lists what was assumed or not modeled, in words; empty means exact.
    """

    name: str
    source: str
    model_type: str | None
    architecture: str | None
    hidden_size: int
    vocab_size: int
    num_layers: int
    layers: tuple[LayerSpec, ...]
    tied_embeddings: bool
    qkv_bias: bool
    towers: tuple[str, ...]
    weight_bits: float
    quant_method: str | None
    approximations: tuple[str, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def is_moe(self) -> bool:
        return any(layer.mlp.kind == "moe" for layer in self.layers)

    def layer_groups(self) -> tuple[tuple[LayerSpec, int], ...]:
        """Distinct layer kinds and how many layers have each, in order of first appearance."""
        counts: dict[LayerSpec, int] = {}
        for layer in self.layers:
            counts[layer] = counts.get(layer, 0) + 1
        return tuple(counts.items())

    def kv_cache_elements(self, context: int) -> int:
        """Cached K/V elements of one sequence at ``context`` tokens, summed over layers (windows cap)."""
        return sum(
            layer.attention.kv_cache_elements_per_token * layer.attention.cached_tokens(context)
            for layer in self.layers
        )


def catalog_names() -> list[str]:
    """Names of the shipped configs, e.g. ``qwen2.5-0.5b``, ``deepseek-v3``."""
    return sorted(p.stem for p in CATALOG_DIR.glob("*.json"))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise InputError(
                f"{size:,} bytes is too large for a config.json (limit {MAX_CONFIG_BYTES:,})",
                path=path,
                hint="point at the model's config.json",
            )
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte {exc.start})", path=path, hint="config.json must be a JSON object"
        ) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        raise InputError(
            f"not valid JSON: {msg}", path=path, line=line, hint="config.json must be a JSON object"
        ) from exc
    if not isinstance(data, dict):
        raise InputError(f"config is a JSON {type(data).__name__}, not an object", path=path)
    return data


def _from_hf_cache(repo_id: str) -> Path | None:
    """``config.json`` of ``repo_id`` in the local Hugging Face cache (offline), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # an invalid repo id for huggingface_hub's validator (HFValidationError): not cached
        return None
    return Path(found) if isinstance(found, str) else None


def _looks_like_hub_id(text: str) -> bool:
    parts = text.split("/")
    return len(parts) == 2 and all(parts) and not text.startswith((".", "/", "~")) and not text.endswith(".json")


def read_model_config(model: str | Path) -> tuple[dict[str, Any], str, str]:
    """(config dict, name, source) from a model directory, a config.json, a Hub ID in the local Hugging Face
    cache, or a catalog name.

    Raises:
        InputError: unreadable, not JSON, too large, not an object (names the file).
        UsageError: none of these; a Hub ID that is not cached says how to fetch only its config.json.
    """
    path = Path(model)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise InputError(
                "directory has no config.json",
                path=path.parent,
                hint="point at a Hugging Face model directory or a config.json",
            )
    if path.is_file():
        return _read_json(path), path.parent.name or str(path), str(path)
    text = str(model)
    if _looks_like_hub_id(text):
        cached = _from_hf_cache(text)
        if cached is not None:
            return _read_json(cached), text.split("/")[-1], f"Hugging Face cache: {text} ({cached})"
    key = text.lower().split("/")[-1].removeprefix("meta-").removesuffix("-hf").removesuffix("-instruct")
    cat = CATALOG_DIR / f"{key}.json"
    if cat.is_file():
        raw = _read_json(cat)
        return raw, key, f"catalog:{key} ({raw.get('_source', '')})"
    if _looks_like_hub_id(text):
        raise UsageError(
            f"{text!r} is not in the local Hugging Face cache (looked up offline) nor in the catalog",
            hint=f'fetch only its config: hf download {text} config.json  (or python -c "from '
            f"huggingface_hub import hf_hub_download; hf_hub_download('{text}', 'config.json')\")",
        )
    raise UsageError(
        f"{text!r} is neither a file, a directory, a cached Hub ID nor a catalog name",
        hint=f"catalog: {', '.join(catalog_names())}",
    )


def _int(raw: dict[str, Any], key: str, source: str, *, default: int | None = None) -> int:
    value = raw.get(key, default)
    if value is None:
        raise InputError(f"missing key {key!r}", path=source, hint=f"a config.json needs {', '.join(_REQUIRED)}")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(
            f"{key} must be a positive integer, got {value!r}", path=source, hint="fix the value in config.json"
        )
    bound = _BOUNDS.get(key)
    if bound is not None and value > bound:
        raise InputError(
            f"{key} = {value:,} is beyond any real model (limit {bound:,})",
            path=source,
            hint="fix the value in config.json",
        )
    return value


def _hf_text_config(raw: dict[str, Any]) -> Any | None:
    """transformers' config object for ``raw`` (its text part for multimodal models), None if unknown."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        return None
    try:
        from transformers import AutoConfig
    except ImportError as exc:
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


def _attr(cfg: Any, raw: dict[str, Any], *names: str) -> Any:
    for n in names:
        v = getattr(cfg, n, None) if cfg is not None else None
        if v is None:
            v = raw.get(n)
        if v is not None:
            return v
    return None


def _quantization(raw: dict[str, Any], source: str, notes: list[str]) -> tuple[float, str | None]:
    q = raw.get("quantization_config")
    if q is None:
        return 16, None
    if not isinstance(q, dict):
        raise InputError(f"quantization_config must be an object, got {type(q).__name__}", path=source)
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        block = q.get("weight_block_size")
        if block:
            notes.append(
                f"fp8 weights with one fp32 scale per {block[0]}x{block[1]} block "
                f"(+{32 / (block[0] * block[1]):.4f} bits/weight, counted) in the decoder layers; "
                "embeddings, output head, norms and towers stay 16-bit"
            )
            return 8 + 32 / (block[0] * block[1]), method
        return 8, method
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        group = q.get("group_size", q.get("q_group_size", 128))
        if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
            raise InputError(f"quantization_config.bits = {bits!r} is not 2, 3, 4 or 8", path=source)
        extra = 0.0 if not isinstance(group, int) or group <= 0 else (16 + bits) / group  # fp16 scale + zero
        notes.append(
            f"{method} {bits}-bit weights, group {group}: +{extra:.3f} bits/weight of scales and zeros; "
            "decoder layers only; embeddings, output head, norms and towers stay 16-bit"
        )
        return bits + extra, method
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            return 4.127, method  # NF4 + double quantization (QLoRA paper, sec. 3)
        if q.get("load_in_8bit"):
            return 8, method
    raise InputError(
        f"quantization_config.quant_method = {method or None!r} is not modeled (fp8, gptq, awq and bitsandbytes are)",
        path=source,
        hint="remove quantization_config to count the model at 16 bits",
    )


def describe_config(raw: dict[str, Any], *, name: str, source: str) -> ModelDescription:
    """Read a config dict into a ModelDescription.

    Raises:
        InputError: a required field missing or not a positive integer, beyond any real model, a hidden size
            not divisible by the heads without ``head_dim``, an unknown quantization (each names the field).
    """
    if not isinstance(raw, dict):
        raise InputError("config is not a JSON object", path=source)
    raw = {k: v for k, v in raw.items() if not k.startswith("_")}
    notes: list[str] = []
    towers = tuple(k.removesuffix("_config") for k in _TOWER_KEYS if isinstance(raw.get(k), dict))
    text_raw = raw
    if isinstance(raw.get("text_config"), dict) and "hidden_size" not in raw:
        text_raw = {**raw["text_config"], "architectures": raw.get("architectures")}
    for key in _REQUIRED:
        if key not in text_raw:
            raise InputError(f"missing key {key!r}", path=source, hint=f"a config.json needs {', '.join(_REQUIRED)}")
    for key in _BOUNDS:
        if key in text_raw and text_raw[key] is not None:
            _int(text_raw, key, source)
    t_heads = _int(text_raw, "num_attention_heads", source)
    if text_raw.get("head_dim") is None and _int(text_raw, "hidden_size", source) % t_heads:
        raise InputError(
            f"hidden_size {text_raw['hidden_size']} is not divisible by num_attention_heads {t_heads} "
            "and there is no head_dim",
            path=source,
            hint="fix hidden_size or num_attention_heads, or add head_dim",
        )
    cfg = _hf_text_config(raw)
    if cfg is not None and hasattr(cfg, "get_text_config"):
        cfg = cfg.get_text_config()
    model_type = raw.get("model_type") if isinstance(raw.get("model_type"), str) else None
    if cfg is None:
        notes.append(
            f"transformers does not know model_type {model_type!r}: a Llama-style block is assumed "
            "(q, k, v, o, SwiGLU gate/up/down, RMSNorm)"
        )
    hidden = _int(text_raw, "hidden_size", source)
    heads = _int(text_raw, "num_attention_heads", source)
    num_layers = _int(text_raw, "num_hidden_layers", source)
    vocab = _int(text_raw, "vocab_size", source)
    kv_heads = text_raw.get("num_key_value_heads") or heads
    kv_heads = _int({"num_key_value_heads": kv_heads}, "num_key_value_heads", source)
    if heads % kv_heads:
        raise InputError(
            f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}",
            path=source,
            hint="fix num_key_value_heads in config.json",
        )
    head_dim = _attr(cfg, text_raw, "head_dim")
    if head_dim is None:
        if hidden % heads:
            raise InputError(
                f"hidden_size {hidden} is not divisible by num_attention_heads {heads} and there is no head_dim",
                path=source,
                hint="fix hidden_size or num_attention_heads, or add head_dim",
            )
        head_dim = hidden // heads
    head_dim = int(head_dim)
    inter = text_raw.get("intermediate_size")
    if inter is None:
        inter = 4 * hidden
        notes.append("intermediate_size = 4 * hidden_size (absent from config)")
    inter = _int({"intermediate_size": inter}, "intermediate_size", source)

    # attention per layer
    if model_type in _MLA_TYPES or text_raw.get("kv_lora_rank"):
        rope = _int(text_raw, "qk_rope_head_dim", source)
        nope = _int(text_raw, "qk_nope_head_dim", source)
        base_att = AttentionSpec(
            kind="mla",
            num_heads=heads,
            num_kv_heads=heads,
            head_dim=rope + nope,
            v_head_dim=_int(text_raw, "v_head_dim", source, default=head_dim),
            q_lora_rank=text_raw.get("q_lora_rank"),
            kv_lora_rank=_int(text_raw, "kv_lora_rank", source),
            qk_rope_head_dim=rope,
            qk_nope_head_dim=nope,
        )
    else:
        kind = "mha" if kv_heads == heads else ("mqa" if kv_heads == 1 else "gqa")
        base_att = AttentionSpec(
            kind=kind, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim
        )
    window = _attr(cfg, {} if cfg is not None else text_raw, "sliding_window")
    if cfg is None and text_raw.get("use_sliding_window") is False:
        window = None
    layer_types = getattr(cfg, "layer_types", None) if cfg is not None else text_raw.get("layer_types")
    windows: list[int | None] = [None] * num_layers
    if isinstance(window, int) and window > 0:
        if layer_types:
            if len(layer_types) != num_layers:
                raise InputError(
                    f"layer_types has {len(layer_types)} entries for {num_layers} layers",
                    path=source,
                    hint="give one layer type per num_hidden_layers",
                )
            windows = [window if t == "sliding_attention" else None for t in layer_types][:num_layers]
            other = {t for t in layer_types if t not in ("sliding_attention", "full_attention")}
            if other:
                notes.append(f"layer types {sorted(other)} are treated as full attention")
        else:
            windows = [window] * num_layers

    # MLP per layer
    experts = _attr(cfg, text_raw, "num_local_experts", "num_experts", "n_routed_experts")
    top_k = _attr(cfg, text_raw, "num_experts_per_tok", "moe_topk")
    mlps: list[MlpSpec] = [MlpSpec("dense", inter)] * num_layers
    if isinstance(experts, int) and experts > 0:
        if not isinstance(top_k, int) or not 0 < top_k <= experts:
            raise InputError(f"num_experts_per_tok = {top_k!r} must be an integer in 1..{experts}", path=source)
        width = text_raw.get("moe_intermediate_size") or inter
        shared = 0
        if text_raw.get("n_shared_experts"):
            shared = int(text_raw["n_shared_experts"]) * int(width)
        elif text_raw.get("shared_expert_intermediate_size"):
            shared = int(text_raw["shared_expert_intermediate_size"])
        moe = MlpSpec(
            "moe",
            inter,
            num_experts=experts,
            top_k=top_k,
            expert_intermediate_size=int(width),
            shared_intermediate_size=shared,
        )
        first_dense = int(text_raw.get("first_k_dense_replace") or 0)
        step = int(text_raw.get("decoder_sparse_step") or 1)
        only_dense = set(text_raw.get("mlp_only_layers") or [])
        freq = int(text_raw.get("moe_layer_freq") or 1)
        if freq != 1 and model_type == "deepseek_v3":
            notes.append(
                f"moe_layer_freq = {freq} is ignored by transformers' DeepseekV3 (every layer from "
                "first_k_dense_replace on is MoE), as here"
            )
            freq = 1
        mlps = [
            moe
            if (i >= first_dense and i not in only_dense and (i + 1) % step == 0 and i % freq == 0)
            else MlpSpec("dense", inter)
            for i in range(num_layers)
        ]
    layers = tuple(
        LayerSpec(AttentionSpec(**{**base_att.__dict__, "window": w}), m) for w, m in zip(windows, mlps, strict=True)
    )

    mtp = text_raw.get("num_nextn_predict_layers") or text_raw.get("num_mtp_layers")
    if mtp:
        notes.append(
            f"num_nextn_predict_layers = {mtp}: the multi-token-prediction module is not built by "
            "transformers and is not counted (DeepSeek-V3: 671B without it, 685B with it)"
        )
    bits, method = _quantization(raw, source, notes)
    unknown = sorted(k for k in raw if k not in _NEUTRAL and not k.endswith("_token_id") and k != "auto_map")
    for k in unknown:
        notes.append(f"config field {k!r} = {json.dumps(raw[k])[:40]} is not modeled (ignored)")
    if "auto_map" in raw:
        notes.append("auto_map (remote code) is not run: the transformers class of the model_type is used")
    qkv_bias = bool(text_raw.get("attention_bias", False)) or model_type in ("qwen2", "qwen2_vl", "qwen2_moe")
    archs = raw.get("architectures")
    return ModelDescription(
        name=name,
        source=source,
        model_type=model_type,
        architecture=archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None,
        hidden_size=hidden,
        vocab_size=vocab,
        num_layers=num_layers,
        layers=layers,
        tied_embeddings=bool(_attr(cfg, text_raw, "tie_word_embeddings") or raw.get("tie_word_embeddings", False)),
        qkv_bias=qkv_bias,
        towers=towers,
        weight_bits=bits,
        quant_method=method,
        approximations=tuple(notes),
        raw=raw,
    )


def load_model_description(model: str | Path) -> ModelDescription:
    """A ModelDescription from a catalog name, a model directory, a config.json or a cached Hub ID.

    Example:
        >>> d = load_model_description("deepseek-v3")
        >>> d.layers[0].mlp.kind, d.layers[3].mlp.kind, d.layers[3].attention.kv_cache_elements_per_token
        ('dense', 'moe', 576)
    """
    raw, name, source = read_model_config(model)
    return describe_config(raw, name=name, source=source)
