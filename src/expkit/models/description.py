"""One model description read from ``config.json``: every layer's attention and MLP, towers, weight bits.

Read through transformers' own config class when it knows the ``model_type`` (so defaults and derived
fields, such as Gemma-2's alternating ``layer_types``, are transformers'), else from the raw numbers with a
Llama-style block assumed and said so. Every config field is either modeled, known not to change counts,
memory or speed (token ids, initialisation, rope constants, routing rules), or listed in
``approximations``: nothing is dropped silently.

This module assembles the description; each step has its own module: ``config_file`` finds and reads the
file, ``config_fields`` reads and checks the fields (through transformers' config class), ``nested`` handles
``text_config``, the towers and encoder-decoder configs, ``layer_specs`` builds each layer's attention and MLP
spec, and ``quantization.scheme_from_config`` reads ``quantization_config``.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import InputError
from expkit.models.attention import AttentionSpec
from expkit.models.config_fields import (
    NO_TRANSFORMERS,
    attr,
    check_values,
    hf_text_config,
    int_field,
    per_layer_widths,
)
from expkit.models.config_file import CATALOG_DIR, catalog_names, read_model_config
from expkit.models.families import Family, Stacks, family_of, resolve_model_type
from expkit.models.layer_specs import LayerSpec, base_attention, layer_mixers, layer_mlps
from expkit.models.mlp import DenseMlp, MlpSpec
from expkit.models.nested import TOWER_KEYS, field_notes, refuse_encoder_decoder, text_part
from expkit.models.quantization import QuantizationSpec, WeightParams, scheme_from_config
from expkit.models.recurrent import RecurrentMixer

__all__ = [
    "CATALOG_DIR",
    "AttentionSpec",
    "LayerSpec",
    "MlpSpec",
    "ModelDescription",
    "catalog_names",
    "config_digest",
    "describe_config",
    "load_model_description",
    "read_model_config",
    "resolve_description",
]

# Descriptions kept by content (``config_digest``), so one command describes its model once however many stages
# ask: a few models per process (a sweep of configs, a lab's replicas at 1, 2 and 4 layers), oldest dropped first.
DESCRIPTION_CACHE_SIZE = 32
_DESCRIPTIONS: OrderedDict[tuple[str, bool], ModelDescription] = OrderedDict()


@dataclass(frozen=True)
class ModelDescription:
    """A model's config as the tools use it. ``layers`` has one LayerSpec per decoder layer.

    ``towers`` names the non-text encoders (``vision_config`` ...), whose parameters count in the total.
    ``quantization`` is the checkpoint's storage scheme (``quantization_config``; 16-bit when absent).
    ``approximations`` lists what was assumed or not modeled, in words; empty means exact.
    ``digest`` is the sha256 of the config it was read from (``config_digest``): equal configs, equal digests,
    whatever the file is called; descriptions are built once per digest (``describe_config``).

    The whole-model figures are sums over the layers (``linear_params``, ``matmul_io_per_token``,
    ``cache_bytes`` ...), each layer answering for its own kind: no figure takes one layer's number as the model's.
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
    extra_params: int = 0  # a family's matmul weights outside the layers and the head (Gemma-3n's AltUp ...)
    encoder_layers: tuple[LayerSpec, ...] = ()  # an encoder-decoder's encoder (``layers`` is its decoder)
    encoder_extra_params: int = 0  # matmuls the encoder runs outside its layers per position (Whisper's convs)
    encoder_extra_io: int = 0
    stacks: Stacks | None = field(default=None, repr=False)  # an encoder-decoder's stacks as its family read them
    encoder_extra_weight_params: int = 0  # the weights of those matmuls as stored (Whisper's conv1 once)
    digest: str = ""

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(self.encoder_layers)

    def source_tokens(self, context: int) -> int:
        """Tokens the encoder reads per sequence when the decoder holds ``context`` (0 without an encoder):
        a fixed length (Whisper's 1500 positions) or the context itself."""
        if not self.encoder_layers:
            return 0
        return self.encoder_layers[0].attention.sequence_tokens(context)

    def encoder_params_read(self) -> int:
        """Matmul weights the encoder's pass multiplies each source token by: its layers, the matmuls outside
        them, and every decoder layer's cross-attention k and v (0 without an encoder)."""
        if not self.encoder_layers:
            return 0
        h = self.hidden_size
        own = sum(layer.linear_params(h) for layer in self.encoder_layers) + self.encoder_extra_params
        return own + sum(layer.source_linear_params(h) for layer in self.layers)

    def encoder_matmul_io_per_token(self) -> int:
        """Activation elements the encoder pass's matmuls read and write per source token."""
        if not self.encoder_layers:
            return 0
        h = self.hidden_size
        own = sum(layer.matmul_io_per_token(h) for layer in self.encoder_layers) + self.encoder_extra_io
        return own + sum(layer.source_matmul_io(h) for layer in self.layers)

    def encoder_layer_groups(self) -> tuple[tuple[LayerSpec, int], ...]:
        counts: dict[LayerSpec, int] = {}
        for layer in self.encoder_layers:
            counts[layer] = counts.get(layer, 0) + 1
        return tuple(counts.items())

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
        """Cached elements of one sequence at ``context`` tokens, summed over layers (windows cap; a
        cross-attention's cache is fixed by the encoder's length)."""
        return sum(m.cache_elements(context) for layer in self.layers for m in layer.mixers)

    def cache_bytes(self, context: int, dtype_bytes: int) -> int:
        """Cache bytes of one sequence at ``context`` tokens, summed over layers: K/V (or latents) at
        ``dtype_bytes`` (windows and chunks cap them), a recurrent mixer's fixed state at its own bytes, a
        cross-attention's K/V over the encoder's tokens."""
        return sum(m.cache_bytes(context, dtype_bytes) for layer in self.layers for m in layer.mixers)

    def attention_groups(self) -> tuple[tuple[AttentionSpec, int], ...]:
        """Each distinct attention of the decoder (self and cross) and how many layers have it."""
        counts: dict[AttentionSpec, int] = {}
        for layer in self.layers:
            for m in layer.mixers:
                counts[m] = counts.get(m, 0) + 1
        return tuple(counts.items())

    def cache_formula(self, context: int) -> str:
        """The cache of one sequence at ``context`` tokens, per group of layers, in words."""
        return " + ".join(dict.fromkeys(a.cache_formula(n, context) for a, n in self.attention_groups()))

    def weight_params_read(self, tokens: float) -> WeightParams:
        """Matmul weights a step that routes ``tokens`` tokens reads once (the head in ``other``)."""
        total = WeightParams(linear=self.extra_params, other=self.head_params)
        for layer, n in self.layer_groups():
            r = layer.weight_params_read(self.hidden_size, tokens)
            total = total + WeightParams(n * r.linear, n * r.experts, n * r.other)
        return total

    def assumptions(self) -> tuple[str, ...]:
        """What the speed model assumes about this model's kinds, once per statement."""
        out: dict[str, None] = {}
        for layer, _ in (*self.layer_groups(), *self.encoder_layer_groups()):
            out.update(dict.fromkeys((*layer.mlp.assumptions(), *(a for m in layer.mixers for a in m.assumptions()))))
        return tuple(out)

    @property
    def notes(self) -> tuple[str, ...]:
        """What reading the config assumed (no ``num_key_value_heads``: a K/V head per query head), then the
        ``approximations``: the notes a ledger prints."""
        text = self.raw
        if isinstance(text.get("text_config"), dict) and "hidden_size" not in text:
            text = text["text_config"]
        given = text.get("num_key_value_heads") or self.is_encoder_decoder  # T5, BART, Whisper: no GQA field
        assumed = () if given else ("num_key_value_heads = num_attention_heads (no GQA)",)
        return tuple(dict.fromkeys((*assumed, *self.approximations)))

    def linear_params(self) -> int:
        """Weights of every matmul as stored, summed over the layers of both stacks (all experts, cross-attention
        k and v), plus the head (counted even when tied to the embedding), the family's matmuls outside the layers
        and an encoder's convolutions (each weight once, however often it runs per position)."""
        h = self.hidden_size
        layers = sum(layer.linear_params(h) for layer in (*self.layers, *self.encoder_layers))
        return layers + self.head_params + self.extra_params + self.encoder_extra_weight_params

    def active_linear_params(self) -> int:
        """Matmul weights one decoder token multiplies by, summed over the layers (top-k of each MoE layer's
        routed experts), plus the head and the family's other matmuls; the encoder's pass is apart."""
        h = self.hidden_size
        return sum(layer.active_linear_params(h) for layer in self.layers) + self.head_params + self.extra_params

    def matmul_io_per_token(self) -> int:
        """Activation elements the decoder's matmuls read and write per token (in + out features on the active
        path), summed over the layers, plus the head's (hidden in, vocabulary out)."""
        h = self.hidden_size
        return sum(layer.matmul_io_per_token(h) for layer in self.layers) + h + self.vocab_size

    def encoder_weight_params(self) -> int:
        """Matmul weights the encoder's pass reads, each once (0 without an encoder): its layers, the matmuls
        outside them as stored, and every decoder layer's cross-attention k and v."""
        if not self.encoder_layers:
            return 0
        h = self.hidden_size
        own = sum(layer.linear_params(h) for layer in self.encoder_layers) + self.encoder_extra_weight_params
        return own + sum(layer.source_linear_params(h) for layer in self.layers)

    def weight_bytes_read(self, tokens: float, weight_bits: int | None = None) -> float:
        """Bytes of the matmul weights a step routing ``tokens`` tokens reads: every weight at ``weight_bits``
        when given (a what-if), else as the checkpoint stores them (its quantized parts at its bits, the head and
        the rest at 16-bit: the memory ledger's bytes)."""
        read = self.weight_params_read(tokens)
        if weight_bits is not None:
            return read.total * weight_bits / 8
        return self.quantization.bytes_of(read, 2)

    def routed_mlps(self) -> tuple[MlpSpec, ...]:
        """Each distinct mixture-of-experts MLP of the decoder, in order of first appearance."""
        return tuple(dict.fromkeys(layer.mlp for layer in self.layers if layer.mlp.num_experts))

    def encoder_attention_groups(self) -> tuple[tuple[AttentionSpec, int], ...]:
        """Each distinct attention of the encoder and how many layers have it."""
        counts: dict[AttentionSpec, int] = {}
        for layer in self.encoder_layers:
            counts[layer.attention] = counts.get(layer.attention, 0) + 1
        return tuple(counts.items())

    def matrix_rows_cols(self) -> int:
        """Rows + columns summed over the matmul weights a token runs through, in every layer of both stacks,
        and the embedding (and an untied head): the size of Adafactor's factored second moment."""
        h = self.hidden_size
        layers = sum(layer.matmul_io_per_token(h) for layer in (*self.layers, *self.encoder_layers))
        return layers + (self.vocab_size + h) * (1 if self.tied_embeddings else 2)

    def largest_matmul_params(self) -> int:
        """The largest single MLP weight matrix of any layer (hidden x intermediate)."""
        return self.hidden_size * max(layer.mlp.intermediate_size for layer in (*self.layers, *self.encoder_layers))

    def with_layers(self, num_layers: int) -> ModelDescription:
        """The same architecture ``num_layers`` deep (the activation fit's scaled replicas): the config with
        ``num_hidden_layers`` changed (a ``layer_types`` list cut to its first kind), described anew."""
        raw = dict(self.raw, num_hidden_layers=num_layers)
        if "layer_types" in raw:
            raw["layer_types"] = list(raw["layer_types"])[:1] * num_layers
        return describe_config(raw, name=f"{self.name}[{num_layers} layers]", source=self.source)


def config_digest(raw: dict[str, Any]) -> str:
    """sha256 of the config's canonical JSON (keys sorted, ``_``-prefixed bookkeeping such as ``_name_or_path``
    left out): the same numbers give the same digest whatever the file or the model is called."""
    content = {k: v for k, v in raw.items() if not k.startswith("_")}
    return hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


def describe_config(raw: dict[str, Any], *, name: str, source: str) -> ModelDescription:
    """Read a config dict into a ModelDescription, once per content: a config whose digest was described before
    (under any name) gives that description under this ``name`` and ``source``.

    Raises:
        InputError: a required field missing or not a positive integer, beyond any real model, a hidden size
            not divisible by the heads without ``head_dim``, an unknown quantization (each names the field),
            an encoder-decoder model (said in one line).
    """
    if not isinstance(raw, dict):
        raise InputError("config is not a JSON object", path=source)
    key = (config_digest(raw), source.startswith("catalog:"))
    desc = _DESCRIPTIONS.get(key)
    if desc is None:
        desc = replace(_describe(raw, name=name, source=source), digest=key[0])
        _DESCRIPTIONS[key] = desc
        while len(_DESCRIPTIONS) > DESCRIPTION_CACHE_SIZE:
            _DESCRIPTIONS.popitem(last=False)
    else:
        _DESCRIPTIONS.move_to_end(key)
    return desc if (desc.name, desc.source) == (name, source) else replace(desc, name=name, source=source)


def _describe(raw: dict[str, Any], *, name: str, source: str) -> ModelDescription:
    """The description of ``raw``, built (``describe_config`` keeps it by digest)."""
    raw = {k: v for k, v in raw.items() if not k.startswith("_")}
    raw, resolved_note = resolve_model_type(raw)
    model_type = raw.get("model_type") if isinstance(raw.get("model_type"), str) else None
    family = family_of(model_type)
    if family.stacks is not None:
        return _describe_stacks(raw, family, name=name, source=source, notes=[resolved_note] if resolved_note else [])
    refuse_encoder_decoder(raw, source)
    towers = tuple(k.removesuffix("_config") for k in TOWER_KEYS if isinstance(raw.get(k), dict))
    checks = {"attention_free": family.attention_free, "zero_ok": family.zero_experts_dense}
    check_values(text_part(raw, None), source, required=False, **checks)
    cfg = hf_text_config(raw, catalog=source.startswith("catalog:"))
    notes: list[str] = [resolved_note] if resolved_note else []
    light = cfg is NO_TRANSFORMERS
    if light:
        cfg = None
        notes.append("transformers is not installed: the catalog entry's own keys are read (each entry is complete)")
    elif cfg is not None and hasattr(cfg, "get_text_config"):
        cfg = cfg.get_text_config()
    text_raw = text_part(raw, cfg, notes)
    check_values(text_raw, source, required=True, **checks)
    if cfg is None and not light:
        notes.append(
            f"transformers does not know model_type {model_type!r} and architectures names none of its classes: "
            "a Llama-style block is assumed (q, k, v, o, SwiGLU gate/up/down, RMSNorm), with latent attention "
            "or experts where kv_lora_rank or expert fields are given; counts, cache and roofline read these layers"
        )
    hidden = int_field(text_raw, "hidden_size", source)
    num_layers = int_field(text_raw, "num_hidden_layers", source)
    layers = _layer_kinds(cfg, text_raw, family, source, notes)
    notes += dict.fromkeys(ly.attention.activation_note for ly in layers if isinstance(ly.attention, RecurrentMixer))
    model_extras = family.model_extras(cfg, text_raw, hidden) if family.model_extras else ()
    quant = scheme_from_config(raw, source)
    notes += [n for n in (quant.note(),) if n]
    notes += field_notes(raw, towers)
    qkv_bias = bool(text_raw.get("attention_bias", False)) or family.qkv_bias
    archs = raw.get("architectures")
    return ModelDescription(
        name=name,
        source=source,
        model_type=model_type,
        architecture=archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None,
        hidden_size=hidden,
        vocab_size=int_field(text_raw, "vocab_size", source),
        num_layers=num_layers,
        layers=layers,
        tied_embeddings=bool(attr(cfg, text_raw, "tie_word_embeddings") or raw.get("tie_word_embeddings", False)),
        qkv_bias=qkv_bias,
        towers=towers,
        quantization=quant,
        approximations=tuple(notes),
        raw=raw,
        extra_params=sum(i * o for i, o in model_extras),
    )


def _describe_stacks(
    raw: dict[str, Any], family: Family, *, name: str, source: str, notes: list[str]
) -> ModelDescription:
    """An encoder-decoder config (T5, BART, Whisper) as its family reads the two stacks: ``layers`` are the
    decoder's (self-attention, cross-attention, MLP), ``encoder_layers`` the encoder's."""
    cfg = hf_text_config(raw, catalog=source.startswith("catalog:"))
    if cfg is NO_TRANSFORMERS:
        cfg = None
    assert family.stacks is not None
    st = family.stacks(cfg, raw, source)
    enc = LayerSpec(st.encoder_attention, st.encoder_mlp, encoder=True, layer_norm=st.layer_norm)
    enc = replace(enc, dropout=st.dropout, activation_dropout=st.activation_dropout, probs_dropout=st.probs_dropout)
    dec = replace(enc, attention=st.decoder_attention, mlp=st.decoder_mlp, cross_attention=st.cross_attention)
    dec = replace(dec, encoder=False)
    quant = scheme_from_config(raw, source)
    notes += [*st.notes, *(n for n in (quant.note(),) if n), *field_notes(raw, ())]
    archs = raw.get("architectures")
    return ModelDescription(
        name=name,
        source=source,
        model_type=raw.get("model_type"),
        architecture=archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None,
        hidden_size=st.hidden_size,
        vocab_size=st.vocab_size,
        num_layers=st.decoder_layers,
        layers=(dec,) * st.decoder_layers,
        tied_embeddings=st.tied_embeddings,
        qkv_bias=False,
        towers=(),
        quantization=quant,
        approximations=tuple(notes),
        raw=raw,
        encoder_layers=(enc,) * st.encoder_layers,
        encoder_extra_params=sum(i * o for i, o in st.encoder_extras),
        encoder_extra_io=sum(i + o for i, o in st.encoder_extras),
        stacks=st,
        encoder_extra_weight_params=sum(
            i * o for i, o in (st.encoder_extras if st.encoder_extra_weights is None else st.encoder_extra_weights)
        ),
    )


def _layer_kinds(
    cfg: Any, text_raw: dict[str, Any], family: Family, source: str, notes: list[str]
) -> tuple[LayerSpec, ...]:
    """Each layer as ``family`` reads it: its mixer, its MLP (``intermediate_size`` one width or one per layer;
    4 * hidden when absent, said), the family's other matmuls, and which layers share an earlier cache."""
    hidden, num_layers = int(text_raw["hidden_size"]), int(text_raw["num_hidden_layers"])
    inter = text_raw.get("intermediate_size")
    widths = per_layer_widths(inter, num_layers, source)
    if inter is None and not family.mlp_free:
        inter = 4 * hidden
        notes.append("intermediate_size = 4 * hidden_size (absent from config)")
    inter = int_field({"intermediate_size": max(widths) if widths else inter or 1}, "intermediate_size", source)
    base_att = base_attention(text_raw, cfg, family, source)
    mixers = layer_mixers(cfg, text_raw, base_att, family, source, notes)
    mlps = layer_mlps(cfg, text_raw, family, inter, source, notes)
    if widths:
        mlps = [
            replace(m, intermediate_size=w) if isinstance(m, DenseMlp) else m for m, w in zip(mlps, widths, strict=True)
        ]
    shared = int(attr(cfg, text_raw, family.kv_shared_field) or 0) if family.kv_shared_field else 0
    mixers = mixers[: num_layers - shared] + [replace(m, kv_shared=True) for m in mixers[num_layers - shared :]]
    extras = family.layer_extras(cfg, text_raw, hidden) if family.layer_extras else ()
    return tuple(LayerSpec(a, m, extras) for a, m in zip(mixers, mlps, strict=True))


def load_model_description(model: str | Path) -> ModelDescription:
    """A ModelDescription from a catalog name, a model directory, a config.json or a cached Hub ID.

    Example:
        >>> d = load_model_description("deepseek-v3")
        >>> d.layers[0].mlp.kind, d.layers[3].mlp.kind, d.layers[3].attention.kv_cache_elements_per_token
        ('dense', 'moe', 576)
    """
    raw, name, source = read_model_config(model)
    return describe_config(raw, name=name, source=source)


def resolve_description(model: ModelDescription | str | Path | dict[str, Any]) -> ModelDescription:
    """``model`` itself when it is a ModelDescription, else its description: a config dict (named by its
    ``_name_or_path`` or ``model_type``), or anything ``load_model_description`` reads."""
    if isinstance(model, ModelDescription):
        return model
    if isinstance(model, dict):
        name = str(model.get("_name_or_path") or model.get("model_type"))
        return describe_config(model, name=name, source="dict")
    return load_model_description(model)
