"""The family registry: what each family of configs is, which model types and architectures it reads, and
which config fields it models. The modules of this package register one family each; the readers
(``layer_specs``, ``description``, ``config_fields``) ask ``family_of`` and never compare a model_type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from expkit.models.attention import AttentionSpec, CrossAttention, EncoderAttention
from expkit.models.mlp import MlpSpec

__all__ = ["LLAMA_LIKE", "Family", "Stacks", "family_of", "modeled_fields", "register", "registered"]


@dataclass(frozen=True)
class Stacks:
    """An encoder-decoder model as its family reads the config: the width, the vocabulary, each stack's depth,
    attention and MLP, the decoder's cross-attention, and the matmuls the encoder runs outside its layers per
    source token (Whisper's two convolutions, as (in, out) shapes). ``notes``: what the family assumes."""

    hidden_size: int
    vocab_size: int
    encoder_layers: int
    decoder_layers: int
    encoder_attention: EncoderAttention
    decoder_attention: AttentionSpec
    cross_attention: CrossAttention
    encoder_mlp: MlpSpec
    decoder_mlp: MlpSpec
    tied_embeddings: bool
    encoder_extras: tuple[tuple[int, int], ...] = ()
    # the weights of ``encoder_extras`` as stored, when one matmul runs more than once per source token (Whisper's
    # conv1 over 2 frames per position: its FLOPs count twice, its weights once); None: one weight per entry
    encoder_extra_weights: tuple[tuple[int, int], ...] | None = None
    notes: tuple[str, ...] = ()
    # what the stacks save for backward outside the attention and MLP kinds:
    layer_norm: bool = False  # LayerNorm with bias (BART, Whisper) instead of an RMS norm (T5)
    embedding_norm: bool = False  # a norm on each stack's embedding output (BART's layernorm_embedding)
    final_norm: bool = True  # a norm after each stack's last layer (T5, Whisper; not post-norm BART)
    learned_positions: tuple[bool, bool] = (False, False)  # position-id lookups (encoder, decoder)
    relative_bias: bool = False  # T5: int64 bucket ids of every (query, key) pair, once per stack
    mel_bins: int = 0  # Whisper: log-mel channels the encoder's convolutions read (2 frames per position)
    # training-mode dropout probabilities: after each sublayer, after the MLP's activation, on the eager
    # attention's probabilities, and the dropouts each stack applies outside its layers (T5: embedding and final
    # output; BART: embedding)
    dropout: float = 0.0
    activation_dropout: float = 0.0
    probs_dropout: float = 0.0
    stack_dropouts: tuple[int, int] = (0, 0)  # per stack: on the embedding output, on the last layer's output


MixerBuilder = Callable[[Any, dict[str, Any], int], AttentionSpec]
MixersBuilder = Callable[[Any, dict[str, Any], int], tuple[AttentionSpec, ...]]
FieldReader = Callable[[Any, dict[str, Any]], dict[str, Any]]
ExtraShapes = Callable[[Any, dict[str, Any], int], tuple[tuple[int, int], ...]]
StacksBuilder = Callable[[Any, dict[str, Any], str], Stacks]


@dataclass(frozen=True)
class Family:
    """One family of configs and how its layers are read.

    ``model_types`` and ``architectures``: the configs it builds. ``fields``: the config fields it models
    besides the common ones (a field no family models is listed as ignored). ``latent_attention``: MLA;
    ``qk_norm``/``output_gate``/``qkv_bias``: attention details; ``always_shared_expert``: every MoE layer has
    one shared expert of ``intermediate_size`` (Llama-4), ``dense_width_field`` the field of its dense layers'
    width; ``shared_mlp_field``: a dense MLP of that width in every layer beside the experts (Granite-4.0-H);
    ``zero_experts_dense``: 0 routed experts means a dense model (transformers builds no expert block);
    ``moe_layer_freq_ignored``: transformers ignores moe_layer_freq (DeepSeek-V3); ``attention_free``: no
    attention fields are needed (every layer is the ``mixer``); ``mlp_free``: layers have no MLP (Mamba-2);
    ``mixer``: builds the recurrent mixer of the ``linear_attention`` layers from (config, fields, hidden);
    ``kv_shared_field``: the field counting the last layers that attend to an earlier layer's cache and hold
    none (Gemma-3n); ``layer_extras``/``model_extras``: the (in, out) shapes of the family's other matmuls per
    layer and outside the layers (Gemma-3n's LAuReL, per-layer inputs, AltUp projections); ``parallel_mixers``:
    the mixer beside the recurrent one on each ``parallel_layer_types`` layer, one per such layer in order
    (Zamba2's shared transformer blocks), in place of the config's attention."""

    name: str
    model_types: tuple[str, ...]
    architectures: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    latent_attention: bool = False
    qk_norm: bool = False
    output_gate: bool = False
    qkv_bias: bool = False
    always_shared_expert: bool = False
    dense_width_field: str | None = None
    shared_mlp_field: str | None = None
    zero_experts_dense: bool = False
    moe_layer_freq_ignored: bool = False
    attention_free: bool = False
    mlp_free: bool = False
    mixer: MixerBuilder | None = None
    kv_shared_field: str | None = None
    layer_extras: ExtraShapes | None = None
    model_extras: ExtraShapes | None = None
    stacks: StacksBuilder | None = None
    indexer: bool = False  # DeepSeek-V3.2's sparse-attention indexer beside the latent attention
    mixer_layer_types: tuple[str, ...] = ("linear_attention",)
    parallel_layer_types: tuple[str, ...] = ()
    parallel_mixers: MixersBuilder | None = None
    gated_mlp: bool = True
    standard_fields: FieldReader | None = None


LLAMA_LIKE = Family(name="llama-like", model_types=())
"""Every model type no module registers: a Llama-style block (q, k, v, o, SwiGLU MLP or experts, RMSNorm),
with latent attention when ``kv_lora_rank`` is given."""

_BY_TYPE: dict[str, Family] = {}
_BY_ARCH: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` to the registry (a model type or architecture registered twice is a bug)."""
    for t in family.model_types:
        if t in _BY_TYPE:
            raise ValueError(f"model_type {t!r} registered by {_BY_TYPE[t].name} and {family.name}")
        _BY_TYPE[t] = family
    for a in family.architectures:
        _BY_ARCH.setdefault(a, family)
    return family


def family_of(model_type: str | None) -> Family:
    """The family registered for ``model_type``; the Llama-like family for any other."""
    return _BY_TYPE.get(model_type or "", LLAMA_LIKE)


def registered() -> tuple[Family, ...]:
    return tuple(dict.fromkeys(_BY_TYPE.values()))


def model_type_of_architecture(arch: str) -> str | None:
    """The first model_type of the family that registers ``arch`` (None if none does)."""
    fam = _BY_ARCH.get(arch)
    return fam.model_types[0] if fam is not None and fam.model_types else None


def modeled_fields() -> frozenset[str]:
    """Every config field some family models."""
    return frozenset(f for fam in registered() for f in fam.fields)
