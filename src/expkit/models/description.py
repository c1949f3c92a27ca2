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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from expkit.errors import InputError, MissingDependency, UsageError
from expkit.models.attention import AttentionSpec, GroupedQueryAttention, LatentAttention
from expkit.models.mlp import DenseMlp, MlpSpec, MoeMlp
from expkit.models.quantization import (
    BitsAndBytesQuantized,
    Fp8Quantized,
    GroupQuantized,
    Mxfp4Quantized,
    QuantizationSpec,
    WeightParams,
)
from expkit.models.recurrent import GatedDeltaNet, MambaMixer, RecurrentMixer
from expkit.models.saved import ActivationTerm, SavedActivationContext

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
    # gpt-oss: the top-k under a second name, the rope's original context, the SwiGLU clamp
    "experts_per_token",
    "initial_context_length",
    "swiglu_limit",
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
_TOWER_KEYS = ("vision_config", "audio_config", "speech_config")
_MLA_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2")


@dataclass(frozen=True)
class LayerSpec:
    """One decoder layer: its attention and its MLP, and what follows from the two."""

    attention: AttentionSpec
    mlp: MlpSpec

    @property
    def label(self) -> str:
        return f"{self.attention.label}, {self.mlp.label}"

    def linear_params(self, hidden: int) -> int:
        """Matmul weights of the layer (all experts)."""
        return self.attention.linear_params(hidden) + self.mlp.linear_params(hidden)

    def active_linear_params(self, hidden: int) -> int:
        """Matmul weights one token multiplies by."""
        return self.attention.linear_params(hidden) + self.mlp.active_linear_params(hidden)

    def matmul_io_per_token(self, hidden: int) -> int:
        return self.attention.matmul_io_per_token(hidden) + self.mlp.matmul_io_per_token(hidden)

    def weight_params_read(self, hidden: int, tokens: float) -> WeightParams:
        """Weights a step routing ``tokens`` tokens reads in this layer, split by storage."""
        return WeightParams(linear=self.attention.linear_params(hidden)) + self.mlp.weight_params_read(hidden, tokens)

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Saved-for-backward bytes per token of this layer, term by term: its two norms, its attention, its
        MLP and the LoRA adapters' r-wide intermediates."""
        norm_b, norm_f = ctx.norm_bytes(ctx.hidden_size)
        terms = [ActivationTerm("2 RMSNorm", 2 * norm_b, f"2 * ({norm_f})")]
        terms += self.attention.saved_terms(ctx)
        terms += self.mlp.saved_terms(ctx)
        if not ctx.full:
            n_lora, ra = len(ctx.targeted), ctx.cast_bytes
            terms.append(
                ActivationTerm("LoRA A outputs", n_lora * ra * ctx.lora_r, f"{n_lora} adapters * {ra} * r={ctx.lora_r}")
            )
        return terms


@dataclass(frozen=True)
class ModelDescription:
    """A model's config as the tools use it. ``layers`` has one LayerSpec per decoder layer.

    ``towers`` names the non-text encoders (``vision_config`` ...), whose parameters count in the total.
    ``quantization`` is the checkpoint's storage scheme (``quantization_config``; 16-bit when absent).
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
    quantization: QuantizationSpec
    approximations: tuple[str, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def weight_bits(self) -> float:
        """Stored bits per quantized weight, scales included (16 when not quantized)."""
        return self.quantization.bits

    @property
    def quant_method(self) -> str | None:
        return self.quantization.method

    @property
    def is_moe(self) -> bool:
        return any(layer.mlp.num_experts for layer in self.layers)

    @property
    def head_params(self) -> int:
        """Weights of the output head's matmul (vocab x hidden; counted even when tied to the embedding)."""
        return self.vocab_size * self.hidden_size

    def layer_groups(self) -> tuple[tuple[LayerSpec, int], ...]:
        """Distinct layer kinds and how many layers have each, in order of first appearance."""
        counts: dict[LayerSpec, int] = {}
        for layer in self.layers:
            counts[layer] = counts.get(layer, 0) + 1
        return tuple(counts.items())

    def kv_cache_elements(self, context: int) -> int:
        """Cached elements of one sequence at ``context`` tokens, summed over layers (windows cap)."""
        return sum(layer.attention.cache_elements(context) for layer in self.layers)

    def cache_bytes(self, context: int, dtype_bytes: int) -> int:
        """Cache bytes of one sequence at ``context`` tokens, summed over layers: K/V (or latents) at
        ``dtype_bytes`` (windows and chunks cap them), a recurrent mixer's fixed state at its own bytes."""
        return sum(layer.attention.cache_bytes(context, dtype_bytes) for layer in self.layers)

    def cache_formula(self, context: int) -> str:
        """The cache of one sequence at ``context`` tokens, per group of layers, in words."""
        counts: dict[AttentionSpec, int] = {}
        for layer in self.layers:
            counts[layer.attention] = counts.get(layer.attention, 0) + 1
        return " + ".join(dict.fromkeys(a.cache_formula(n, context) for a, n in counts.items()))

    def weight_params_read(self, tokens: float) -> WeightParams:
        """Matmul weights a step that routes ``tokens`` tokens reads once (the head in ``other``)."""
        total = WeightParams(other=self.head_params)
        for layer, n in self.layer_groups():
            r = layer.weight_params_read(self.hidden_size, tokens)
            total = total + WeightParams(n * r.linear, n * r.experts, n * r.other)
        return total

    def assumptions(self) -> tuple[str, ...]:
        """What the speed model assumes about this model's kinds, once per statement."""
        out: dict[str, None] = {}
        for layer, _ in self.layer_groups():
            out.update(dict.fromkeys((*layer.mlp.assumptions(), *layer.attention.assumptions())))
        return tuple(out)


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
    for where in (data, data.get("text_config")):
        if isinstance(where, dict):
            _check_dtype(where, path)
    return data


# The dtype names torch 2.13 defines (transformers reads a config's dtype as getattr(torch, name)), and "auto".
_DTYPE_NAMES = frozenset((
    "bfloat16", "float16", "float32", "float64", "half", "float", "double", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex32", "complex64", "complex128",
    "chalf", "cfloat", "cdouble", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "short", "int", "long", "qint8", "qint32", "quint8", "quint4x2", "quint2x4", "auto",
))  # fmt: skip


def _check_dtype(config: dict[str, Any], path: Path) -> None:
    """A ``torch_dtype``/``dtype`` that torch does not define (``float128``) is refused by name: transformers
    raised an AttributeError traceback from ``getattr(torch, ...)`` (issue 21)."""
    for key in ("torch_dtype", "dtype"):
        value = config.get(key)
        if value is not None and (not isinstance(value, str) or value not in _DTYPE_NAMES):
            raise InputError(
                f"{key} {value!r} is not a torch dtype",
                path=path,
                hint="use one of float32, float16, bfloat16, float64, float8_e4m3fn, float8_e5m2, auto "
                "(or another torch dtype name)",
            )


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


_NO_TRANSFORMERS = object()
"""What ``_hf_text_config`` returns for a catalog entry in the light install: its own keys are read."""


def _hf_text_config(raw: dict[str, Any], *, catalog: bool = False) -> Any | None:
    """transformers' config object for ``raw`` (its text part for multimodal models), None if unknown.

    Without transformers a user's config is refused (its defaults live in transformers), but a catalog entry is
    read from its own keys: each entry is written complete, and tests/models/test_catalog_light.py checks that
    every entry describes the same model with and without transformers (``_NO_TRANSFORMERS`` is returned)."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        return None
    try:
        from transformers import AutoConfig
    except ImportError as exc:
        if catalog:
            return _NO_TRANSFORMERS
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


def _quantization(raw: dict[str, Any], source: str) -> QuantizationSpec:
    """The storage scheme ``quantization_config`` names (16-bit when there is none)."""
    q = raw.get("quantization_config")
    if q is None:
        return QuantizationSpec()
    if not isinstance(q, dict):
        raise InputError(f"quantization_config must be an object, got {type(q).__name__}", path=source)
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        block = q.get("weight_block_size")
        if block:
            return Fp8Quantized(method, 8 + 32 / (block[0] * block[1]), block=(int(block[0]), int(block[1])))
        return Fp8Quantized(method, 8)
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        group = q.get("group_size", q.get("q_group_size", 128))
        if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
            raise InputError(f"quantization_config.bits = {bits!r} is not 2, 3, 4 or 8", path=source)
        extra = 0.0 if not isinstance(group, int) or group <= 0 else (16 + bits) / group  # fp16 scale + zero
        return GroupQuantized(method, bits + extra, weight_bits=bits, group_size=group if isinstance(group, int) else 0)
    if method == "mxfp4":
        return Mxfp4Quantized(method, 4 + 8 / 32)  # e2m1 values + one e8m0 scale per 32 (OCP MX spec v1.0)
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            return BitsAndBytesQuantized(method, 4.127)  # NF4 + double quantization (QLoRA paper, sec. 3)
        if q.get("load_in_8bit"):
            return BitsAndBytesQuantized(method, 8)
    raise InputError(
        f"quantization_config.quant_method = {method or None!r} is not modeled "
        "(fp8, gptq, awq, mxfp4 and bitsandbytes are)",
        path=source,
        hint="remove quantization_config to count the model at 16 bits",
    )


_ENCODER_DECODER_KEYS = ("encoder_layers", "decoder_layers", "encoder", "decoder", "num_decoder_layers")


def _refuse_encoder_decoder(raw: dict[str, Any], source: str) -> None:
    """Encoder-decoder models (Whisper, T5, BART) are not modelled: one line that says so."""
    keys = [k for k in _ENCODER_DECODER_KEYS if k in raw]
    if raw.get("is_encoder_decoder") or keys:
        why = "is_encoder_decoder" if raw.get("is_encoder_decoder") else ", ".join(keys)
        raise InputError(
            f"encoder-decoder model ({raw.get('model_type') or 'model_type not given'}, {why}): not modelled; "
            "expkit counts decoder-only models and multimodal ones with a decoder-only text part",
            path=source,
            hint="no encoder-decoder ledger or roofline exists yet",
        )


def _text_part(raw: dict[str, Any], cfg: Any, notes: list[str] | None = None) -> dict[str, Any]:
    """The text model's fields: ``text_config`` of a multimodal config, where transformers' text config
    class supplies the fields it leaves out (as transformers builds the model; each one noted)."""
    if not (isinstance(raw.get("text_config"), dict) and "hidden_size" not in raw):
        return raw
    text_raw = {**raw["text_config"], "architectures": raw.get("architectures")}
    if cfg is not None:
        for k in (*_REQUIRED, *_BOUNDS):
            v = getattr(cfg, k, None)
            if k not in text_raw and isinstance(v, int) and not isinstance(v, bool):
                text_raw[k] = v
                if notes is not None and k in _REQUIRED:
                    notes.append(f"text_config.{k} = {v} from transformers' {type(cfg).__name__} default")
    return text_raw


def _check_values(text_raw: dict[str, Any], source: str, *, required: bool) -> None:
    """Every number the description reads is a positive integer within bounds, and heads divide evenly;
    ``required``: the fields without which nothing can be counted are present (checked once transformers'
    defaults are filled in)."""
    if required:
        for key in _REQUIRED:
            if key not in text_raw:
                raise InputError(
                    f"missing key {key!r}", path=source, hint=f"a config.json needs {', '.join(_REQUIRED)}"
                )
    for key in _BOUNDS:
        if key in text_raw and text_raw[key] is not None:
            _int(text_raw, key, source)
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


_QK_NORM_TYPES = ("qwen3", "qwen3_moe", "qwen3_next", "gemma3", "gemma3_text")  # RMSNorm on q and k per head
_GATED_OUTPUT_TYPES = ("qwen3_next",)  # q_proj also yields a sigmoid gate on the attention output


def _base_attention(text_raw: dict[str, Any], cfg: Any, model_type: str | None, source: str) -> AttentionSpec:
    heads = _int(text_raw, "num_attention_heads", source)
    kv_heads = int(text_raw.get("num_key_value_heads") or heads)
    head_dim = _attr(cfg, text_raw, "head_dim")
    head_dim = int(head_dim) if head_dim is not None else _int(text_raw, "hidden_size", source) // heads
    if model_type in _MLA_TYPES or text_raw.get("kv_lora_rank"):
        rope = _int(text_raw, "qk_rope_head_dim", source)
        nope = _int(text_raw, "qk_nope_head_dim", source)
        return LatentAttention(
            num_heads=heads,
            num_kv_heads=heads,
            head_dim=rope + nope,
            v_head_dim=_int(text_raw, "v_head_dim", source, default=head_dim),
            q_lora_rank=text_raw.get("q_lora_rank"),
            kv_lora_rank=_int(text_raw, "kv_lora_rank", source),
            qk_rope_head_dim=rope,
            qk_nope_head_dim=nope,
        )
    return GroupedQueryAttention(
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        qk_norm=model_type in _QK_NORM_TYPES,
        output_gate=model_type in _GATED_OUTPUT_TYPES,
    )


def _layer_types(cfg: Any, text_raw: dict[str, Any], num_layers: int, source: str) -> list[str] | None:
    """``layer_types`` as transformers derives it (Gemma's pattern, Llama-4's chunked/NoPE, hybrids'
    linear layers), or the config's own list; None when neither has one."""
    layer_types = getattr(cfg, "layer_types", None) if cfg is not None else text_raw.get("layer_types")
    if not layer_types:
        return None
    if len(layer_types) != num_layers:
        raise InputError(
            f"layer_types has {len(layer_types)} entries for {num_layers} layers",
            path=source,
            hint="give one layer type per num_hidden_layers",
        )
    return [str(t) for t in layer_types]


def _recurrent_mixer(cfg: Any, text_raw: dict[str, Any], model_type: str | None, hidden: int) -> AttentionSpec | None:
    """The mixer of a hybrid model's ``linear_attention`` layers (Jamba: Mamba; Qwen3-Next: gated DeltaNet),
    None for a model_type whose mixer is not modelled."""
    if model_type == "jamba":
        inner = int(_attr(cfg, text_raw, "mamba_expand")) * hidden
        return MambaMixer(
            num_heads=1,
            num_kv_heads=1,
            head_dim=inner,
            v_head_dim=inner,
            inner=inner,
            d_state=int(_attr(cfg, text_raw, "mamba_d_state")),
            dt_rank=int(_attr(cfg, text_raw, "mamba_dt_rank")),
            conv_channels=inner,
            conv_kernel=int(_attr(cfg, text_raw, "mamba_d_conv")),
        )
    if model_type == "qwen3_next":
        heads, kheads = (
            int(_attr(cfg, text_raw, "linear_num_value_heads")),
            int(_attr(cfg, text_raw, "linear_num_key_heads")),
        )
        dk, dv = int(_attr(cfg, text_raw, "linear_key_head_dim")), int(_attr(cfg, text_raw, "linear_value_head_dim"))
        return GatedDeltaNet(
            num_heads=heads,
            num_kv_heads=kheads,
            head_dim=dk,
            v_head_dim=dv,
            conv_channels=2 * kheads * dk + heads * dv,  # the conv runs over q, k and v
            conv_kernel=int(_attr(cfg, text_raw, "linear_conv_kernel_dim")),
        )
    return None


def _mixers(
    cfg: Any, text_raw: dict[str, Any], base: AttentionSpec, model_type: str | None, source: str, notes: list[str]
) -> list[AttentionSpec]:
    """Each layer's attention (or recurrent mixer), from ``layer_types``, ``sliding_window`` and
    ``attention_chunk_size``: full, sliding (window), chunked (chunk) or a hybrid's linear-attention layer."""
    num_layers = int(text_raw["num_hidden_layers"])
    window = _attr(cfg, {} if cfg is not None else text_raw, "sliding_window")
    if cfg is None and text_raw.get("use_sliding_window") is False:
        window = None
    window = window if isinstance(window, int) and window > 0 else None
    chunk = _attr(cfg, text_raw, "attention_chunk_size")
    chunk = chunk if isinstance(chunk, int) and chunk > 0 else None
    layer_types = _layer_types(cfg, text_raw, num_layers, source)
    if layer_types is None:
        return [replace(base, window=window)] * num_layers
    spans = {
        "sliding_attention": replace(base, window=window) if window else None,
        "chunked_attention": replace(base, chunk=chunk) if chunk else None,
    }
    recurrent = _recurrent_mixer(cfg, text_raw, model_type, int(text_raw["hidden_size"]))
    out: list[AttentionSpec] = []
    unknown: set[str] = set()
    for t in layer_types:
        spanned = spans.get(t)
        if spanned is not None:
            out.append(spanned)
        elif t == "linear_attention" and recurrent is not None:
            out.append(recurrent)
        else:
            if t not in ("full_attention", *spans):
                unknown.add(t)
            out.append(base)
    if unknown:
        notes.append(f"layer types {sorted(unknown)} are treated as full attention")
    return out


_ALWAYS_SHARED_TYPES = ("llama4_text", "llama4")  # one shared expert of intermediate_size in every MoE layer


def _moe_layer_flags(cfg: Any, text_raw: dict[str, Any], num_layers: int, notes: list[str]) -> list[bool]:
    """Which layers are mixture-of-experts: transformers' own per-layer list where the config class derives
    one (Llama-4's ``moe_layers`` from ``interleave_moe_layer_step``, Jamba's ``layers_num_experts`` from
    ``expert_layer_period``/``offset``), else the DeepSeek/Qwen rules (``first_k_dense_replace``,
    ``decoder_sparse_step``, ``mlp_only_layers``, ``moe_layer_freq``)."""
    moe_layers = getattr(cfg, "moe_layers", None) if cfg is not None else None
    if isinstance(moe_layers, list) and all(isinstance(i, int) for i in moe_layers):
        return [i in set(moe_layers) for i in range(num_layers)]
    per_layer = getattr(cfg, "layers_num_experts", None) if cfg is not None else None
    if isinstance(per_layer, list) and len(per_layer) == num_layers:
        return [int(e) > 1 for e in per_layer]
    first_dense = int(text_raw.get("first_k_dense_replace") or 0)
    step = int(text_raw.get("decoder_sparse_step") or 1)
    only_dense = set(text_raw.get("mlp_only_layers") or [])
    freq = int(text_raw.get("moe_layer_freq") or 1)
    if freq != 1 and text_raw.get("model_type", "") in ("deepseek_v3",):
        notes.append(
            f"moe_layer_freq = {freq} is ignored by transformers' DeepseekV3 (every layer from "
            "first_k_dense_replace on is MoE), as here"
        )
        freq = 1
    return [
        i >= first_dense and i not in only_dense and (i + 1) % step == 0 and i % freq == 0 for i in range(num_layers)
    ]


def _mlps(
    cfg: Any, text_raw: dict[str, Any], model_type: str | None, inter: int, source: str, notes: list[str]
) -> list[MlpSpec]:
    """Each layer's MLP: dense, or mixture-of-experts on the layers the config's pattern routes."""
    num_layers = int(text_raw["num_hidden_layers"])
    experts = _attr(cfg, text_raw, "num_local_experts", "num_experts", "n_routed_experts")
    top_k = _attr(cfg, text_raw, "num_experts_per_tok", "moe_topk", "experts_per_token")
    # Llama-4: the dense layers between MoE layers are intermediate_size_mlp wide
    dense_width = (
        int(_attr(cfg, text_raw, "intermediate_size_mlp") or inter) if model_type in _ALWAYS_SHARED_TYPES else inter
    )
    dense = DenseMlp(intermediate_size=dense_width)
    if not (isinstance(experts, int) and experts > 0):
        return [dense] * num_layers
    if not isinstance(top_k, int) or not 0 < top_k <= experts:
        raise InputError(f"num_experts_per_tok = {top_k!r} must be an integer in 1..{experts}", path=source)
    width = int(text_raw.get("moe_intermediate_size") or inter)
    shared = 0
    if text_raw.get("n_shared_experts"):
        shared = int(text_raw["n_shared_experts"]) * width
    elif text_raw.get("shared_expert_intermediate_size"):
        shared = int(text_raw["shared_expert_intermediate_size"])
    elif model_type in _ALWAYS_SHARED_TYPES:
        shared = inter  # Llama4TextMoe: shared_expert = Llama4TextMLP(config), intermediate_size wide
    moe = MoeMlp(
        intermediate_size=inter,
        experts=experts,
        k=top_k,
        expert_intermediate_size=width,
        shared_intermediate_size=shared,
    )
    flags = _moe_layer_flags(cfg, {**text_raw, "model_type": model_type}, num_layers, notes)
    return [moe if is_moe else dense for is_moe in flags]


def _unmodelled(fields: dict[str, Any], where: str) -> list[str]:
    """A note for each field that may change a figure and is not modelled (``where``: its place)."""
    notes = []
    for k in sorted(fields):
        if k in _NEUTRAL or k.endswith("_token_id") or k in ("auto_map", "architectures") or k.startswith("_"):
            continue
        notes.append(f"config field {where}{k!r} = {json.dumps(fields[k])[:40]} is not modeled (ignored)")
    return notes


def _field_notes(raw: dict[str, Any], towers: tuple[str, ...]) -> list[str]:
    """Unmodelled fields at the top level and in ``text_config``, and what the towers leave out."""
    notes = _unmodelled(raw, "")
    if isinstance(raw.get("text_config"), dict):
        notes += _unmodelled(raw["text_config"], "text_config.")
    for t in towers:
        notes.append(
            f"{t} tower: its parameters are counted (the transformers class builds it); its activations, "
            "cache and FLOPs are not in the ledger or the roofline"
        )
    mtp = raw.get("num_nextn_predict_layers") or raw.get("num_mtp_layers")
    if mtp:
        notes.append(
            f"num_nextn_predict_layers = {mtp}: the multi-token-prediction module is not built by "
            "transformers and is not counted (DeepSeek-V3: 671B without it, 685B with it)"
        )
    if "auto_map" in raw:
        notes.append("auto_map (remote code) is not run: the transformers class of the model_type is used")
    return notes


def describe_config(raw: dict[str, Any], *, name: str, source: str) -> ModelDescription:
    """Read a config dict into a ModelDescription.

    Raises:
        InputError: a required field missing or not a positive integer, beyond any real model, a hidden size
            not divisible by the heads without ``head_dim``, an unknown quantization (each names the field),
            an encoder-decoder model (said in one line).
    """
    if not isinstance(raw, dict):
        raise InputError("config is not a JSON object", path=source)
    raw = {k: v for k, v in raw.items() if not k.startswith("_")}
    _refuse_encoder_decoder(raw, source)
    towers = tuple(k.removesuffix("_config") for k in _TOWER_KEYS if isinstance(raw.get(k), dict))
    _check_values(_text_part(raw, None), source, required=False)
    cfg = _hf_text_config(raw, catalog=source.startswith("catalog:"))
    notes: list[str] = []
    light = cfg is _NO_TRANSFORMERS
    if light:
        cfg = None
        notes.append("transformers is not installed: the catalog entry's own keys are read (each entry is complete)")
    elif cfg is not None and hasattr(cfg, "get_text_config"):
        cfg = cfg.get_text_config()
    text_raw = _text_part(raw, cfg, notes)
    _check_values(text_raw, source, required=True)
    model_type = raw.get("model_type") if isinstance(raw.get("model_type"), str) else None
    if cfg is None and not light:
        notes.append(
            f"transformers does not know model_type {model_type!r}: a Llama-style block is assumed "
            "(q, k, v, o, SwiGLU gate/up/down, RMSNorm)"
        )
    hidden = _int(text_raw, "hidden_size", source)
    num_layers = _int(text_raw, "num_hidden_layers", source)
    inter = text_raw.get("intermediate_size")
    if inter is None:
        inter = 4 * hidden
        notes.append("intermediate_size = 4 * hidden_size (absent from config)")
    inter = _int({"intermediate_size": inter}, "intermediate_size", source)
    base_att = _base_attention(text_raw, cfg, model_type, source)
    mixers = _mixers(cfg, text_raw, base_att, model_type, source, notes)
    mlps = _mlps(cfg, text_raw, model_type, inter, source, notes)
    layers = tuple(LayerSpec(a, m) for a, m in zip(mixers, mlps, strict=True))
    notes += dict.fromkeys(a.activation_note for a in mixers if isinstance(a, RecurrentMixer))
    quant = _quantization(raw, source)
    notes += [n for n in (quant.note(),) if n]
    notes += _field_notes(raw, towers)
    qkv_bias = bool(text_raw.get("attention_bias", False)) or model_type in ("qwen2", "qwen2_vl", "qwen2_moe")
    archs = raw.get("architectures")
    return ModelDescription(
        name=name,
        source=source,
        model_type=model_type,
        architecture=archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None,
        hidden_size=hidden,
        vocab_size=_int(text_raw, "vocab_size", source),
        num_layers=num_layers,
        layers=layers,
        tied_embeddings=bool(_attr(cfg, text_raw, "tie_word_embeddings") or raw.get("tie_word_embeddings", False)),
        qkv_bias=qkv_bias,
        towers=towers,
        quantization=quant,
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
