"""Building the per-layer specs of a config: each layer's attention (or recurrent mixer) and MLP kind, read from
the config's fields and transformers' per-layer lists (layer types, MoE placement)."""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, fields, replace
from typing import Any

from expkit.errors import InputError
from expkit.models.attention import (
    AttentionSpec,
    GroupedQueryAttention,
    IndexedLatentAttention,
    LatentAttention,
    ParallelMixers,
)
from expkit.models.config_fields import attr, int_field
from expkit.models.families.registry import LLAMA_LIKE, Family
from expkit.models.mlp import DenseMlp, MlpSpec, MoeMlp, NoMlp, PlainMlp
from expkit.models.quantization import WeightParams
from expkit.models.saved import ActivationTerm, SavedActivationContext

__all__ = ["LayerSpec", "base_attention", "layer_mixers", "layer_mlps"]


@dataclass(frozen=True)
class LayerSpec:
    """One layer: its attention and its MLP, and what follows from the two. An encoder-decoder's decoder
    layers add a ``cross_attention`` over the encoder's output; its encoder layers are ``encoder`` layers
    (they run over the source tokens, once per input)."""

    attention: AttentionSpec
    mlp: MlpSpec
    extra_shapes: tuple[tuple[int, int], ...] = ()  # a family's other matmuls in the layer (Gemma-3n's LAuReL ...)
    cross_attention: AttentionSpec | None = None
    encoder: bool = False
    layer_norm: bool = False  # LayerNorm with bias (BART, Whisper) instead of RMSNorm
    # training-mode dropout (encoder-decoder families): after each attention and the MLP (hidden wide), after
    # the MLP's activation (intermediate wide), and on the eager attention's probabilities (T5)
    dropout: float = 0.0
    activation_dropout: float = 0.0
    probs_dropout: float = 0.0

    @property
    def label(self) -> str:
        cross = f", {self.cross_attention.label}" if self.cross_attention is not None else ""
        return f"{self.attention.label}{cross}, {self.mlp.label}"

    @property
    def mixers(self) -> tuple[AttentionSpec, ...]:
        """The layer's attentions: its own (each part of mixers that run side by side: Falcon-H1's attention
        and Mamba-2), and its cross-attention when it has one."""
        own = self.attention.parts if isinstance(self.attention, ParallelMixers) else (self.attention,)
        return own if self.cross_attention is None else (*own, self.cross_attention)

    @property
    def extra_params(self) -> int:
        return sum(i * o for i, o in self.extra_shapes)

    def linear_params(self, hidden: int) -> int:
        """Matmul weights the layer stores (all experts, the cross-attention's k and v included; a shared block's
        weights only in the layer that holds them)."""
        own = sum(m.linear_params(hidden) - m.shared_linear_params(hidden) for m in self.mixers)
        return own + self.mlp.linear_params(hidden) + self.extra_params

    def active_linear_params(self, hidden: int) -> int:
        """Matmul weights one token of the layer's own stream multiplies by (the cross-attention's k and v run
        over the encoder's tokens instead: ``source_linear_params``)."""
        own = sum(m.token_linear_params(hidden) for m in self.mixers)
        return own + self.mlp.active_linear_params(hidden) + self.extra_params

    def source_linear_params(self, hidden: int) -> int:
        """Matmul weights this layer runs over each encoder token (a cross-attention's k and v; 0 otherwise)."""
        return sum(i * o for m in self.mixers for i, o in m.source_linear_shapes(hidden))

    def source_matmul_io(self, hidden: int) -> int:
        return sum(i + o for m in self.mixers for i, o in m.source_linear_shapes(hidden))

    def matmul_io_per_token(self, hidden: int) -> int:
        extra = sum(i + o for i, o in self.extra_shapes)
        att = sum(m.matmul_io_per_token(hidden) for m in self.mixers)
        return att + self.mlp.matmul_io_per_token(hidden) + extra

    def weight_params_read(self, hidden: int, tokens: float) -> WeightParams:
        """Weights a step routing ``tokens`` tokens reads in this layer, split by storage (the cross-attention's
        k and v are read by the encoder's pass, not here; a shared block's weights by the layer that holds them)."""
        mixers = sum(m.token_linear_params(hidden) - m.shared_linear_params(hidden) for m in self.mixers)
        own = WeightParams(linear=mixers + self.extra_params)
        return own + self.mlp.weight_params_read(hidden, tokens)

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Saved-for-backward bytes per token of this layer, term by term: its norms, its attention (and
        cross-attention), its MLP and the LoRA adapters' r-wide intermediates."""
        norm_b, norm_f = (ctx.layer_norm_bytes if self.layer_norm else ctx.norm_bytes)(ctx.hidden_size)
        n_norms = 1 + len(self.mixers)
        terms = [ActivationTerm(f"{n_norms} norms", n_norms * norm_b, f"{n_norms} * ({norm_f})")]
        for m in self.mixers:
            terms += m.saved_terms(ctx)
        terms += self.mlp.saved_terms(ctx)
        terms += self._dropout_terms(ctx)
        if not ctx.full:
            n_lora, ra = len(ctx.targeted), ctx.cast_bytes
            if self.encoder or self.cross_attention is not None:  # count the adapters of this layer's own linears
                att = len(ctx.targeted & {"q_proj", "k_proj", "v_proj", "o_proj"})
                mlp = min(len(ctx.targeted & {"gate_proj", "up_proj", "down_proj"}), self.mlp.matmuls)
                n_lora = att * len(self.mixers) + mlp
            terms.append(
                ActivationTerm("LoRA A outputs", n_lora * ra * ctx.lora_r, f"{n_lora} adapters * {ra} * r={ctx.lora_r}")
            )
        return terms

    def _dropout_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Masks of the training-mode dropouts (measured on tiny T5 and BART replicas): each sublayer output's
        (hidden wide), the activation's (intermediate wide; the down projection then saves the dropped
        tensor in place of the activation's output), and the eager attention probabilities' (its mask and the
        dropped probabilities the value matmul saves)."""
        m, h, terms = ctx.dropout_mask_bytes, ctx.hidden_size, []
        if self.dropout:
            n = len(self.mixers) + 1
            terms.append(ActivationTerm("dropout masks", n * m * h, f"{n} sublayer outputs * {m} B * h"))
        if self.activation_dropout:
            inter = self.mlp.intermediate_size
            terms.append(ActivationTerm("activation dropout mask", m * inter, f"{m} B * {inter}"))
        for att in self.mixers if self.probs_dropout else ():
            heads, keys = att.num_heads, (ctx.source if att is self.cross_attention else ctx.seq)
            if att.position_bias and att is self.attention:  # T5's eager path keeps fp32 probs
                mask = 1 if ctx.device == "cuda" else 4
                b = (mask + 4) * heads * keys
                terms.append(ActivationTerm("probs dropout", b, f"mask {mask} B + dropped probs 4 B, * {heads} * T"))
            elif ctx.attention == "eager":
                b = (m + ctx.act) * heads * keys
                terms.append(
                    ActivationTerm("probs dropout", b, f"mask {m} B + dropped probs {ctx.act} B, * {heads} * T")
                )
            elif ctx.device == "cpu":
                # SDPA with dropout_p on the CPU takes its math path and keeps no logsumexp: in fp32 the probs, the
                # mask and the dropped probs (12 B per head and key); under autocast 14 B, 15 B with T5's zero
                # bias (measured on tiny BART and T5 replicas; the split between tensors was not identified)
                per = 12 if not ctx.autocast else 14 + int(att.position_bias)
                b = per * heads * keys - 4 * heads
                terms.append(
                    ActivationTerm("SDPA probs dropout (CPU math path)", b, f"{per} * {heads} * keys - lse 4*{heads}")
                )
        return terms


def base_attention(text_raw: dict[str, Any], cfg: Any, family: Family, source: str) -> AttentionSpec | None:
    """The attention of the model's attention layers (None for an attention-free family: Mamba-2)."""
    if family.attention_free and "num_attention_heads" not in text_raw:
        return None
    heads = int_field(text_raw, "num_attention_heads", source)
    kv_heads = int(text_raw.get("num_key_value_heads") or heads)
    head_dim = attr(cfg, text_raw, "head_dim")
    head_dim = int(head_dim) if head_dim is not None else int_field(text_raw, "hidden_size", source) // heads
    if family.latent_attention or text_raw.get("kv_lora_rank"):
        rope = int_field(text_raw, "qk_rope_head_dim", source)
        nope = int_field(text_raw, "qk_nope_head_dim", source)
        mla = LatentAttention(
            num_heads=heads,
            num_kv_heads=heads,
            head_dim=rope + nope,
            v_head_dim=int_field(text_raw, "v_head_dim", source, default=head_dim),
            q_lora_rank=text_raw.get("q_lora_rank"),
            kv_lora_rank=int_field(text_raw, "kv_lora_rank", source),
            qk_rope_head_dim=rope,
            qk_nope_head_dim=nope,
        )
        if not family.indexer:
            return mla
        index = {k: int_field({k: attr(cfg, text_raw, k)}, k, source) for k in ("index_n_heads", "index_head_dim")}
        return IndexedLatentAttention(
            **{f.name: getattr(mla, f.name) for f in fields(mla)},
            index_heads=index["index_n_heads"],
            index_head_dim=index["index_head_dim"],
            index_topk=int_field({"index_topk": attr(cfg, text_raw, "index_topk")}, "index_topk", source),
        )
    return GroupedQueryAttention(
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        qk_norm=family.qk_norm,
        output_gate=family.output_gate,
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


def layer_mixers(
    cfg: Any, text_raw: dict[str, Any], base: AttentionSpec | None, family: Family, source: str, notes: list[str]
) -> list[AttentionSpec]:
    """Each layer's attention (or recurrent mixer), from ``layer_types``, ``sliding_window`` and
    ``attention_chunk_size``: full, sliding (window), chunked (chunk) or a hybrid's linear-attention layer
    (the family's mixer)."""
    num_layers = int(text_raw["num_hidden_layers"])
    window = attr(cfg, {} if cfg is not None else text_raw, "sliding_window")
    if cfg is None and text_raw.get("use_sliding_window") is False:
        window = None
    window = window if isinstance(window, int) and window > 0 else None
    chunk = attr(cfg, text_raw, "attention_chunk_size")
    chunk = chunk if isinstance(chunk, int) and chunk > 0 else None
    layer_types = _layer_types(cfg, text_raw, num_layers, source)
    hidden = int(text_raw["hidden_size"])
    recurrent = family.mixer(cfg, text_raw, hidden) if family.mixer is not None else None
    beside = iter(family.parallel_mixers(cfg, text_raw, hidden)) if family.parallel_mixers is not None else None
    if layer_types is None:
        if base is None:
            raise InputError("no attention heads and no layer_types: no layer can be read", path=source)
        return [replace(base, window=window)] * num_layers
    spans = {
        "sliding_attention": replace(base, window=window) if window and base else None,
        "chunked_attention": replace(base, chunk=chunk) if chunk and base else None,
    }
    out: list[AttentionSpec] = []
    unknown: set[str] = set()
    for t in layer_types:
        spanned = spans.get(t)
        if spanned is not None:
            out.append(spanned)
        elif t in family.mixer_layer_types and recurrent is not None:
            out.append(recurrent)
        elif t in family.parallel_layer_types and recurrent is not None and beside is not None:
            block = next(beside)  # the family's mixer for this layer (Zamba2: a use of a shared block)
            out.append(ParallelMixers(**_attention_fields(block), parts=(block, recurrent)))
        elif t in family.parallel_layer_types and recurrent is not None and base is not None:
            spanned = replace(base, window=window) if window else base
            out.append(ParallelMixers(**_attention_fields(spanned), parts=(spanned, recurrent)))
        elif base is None:
            raise InputError(f"layer type {t!r} needs attention heads, and the config gives none", path=source)
        else:
            if t not in ("full_attention", "indexed_attention", *spans):  # indexed: DeepSeek-V3.2's, full
                unknown.add(t)
            out.append(base)
    if unknown:
        notes.append(f"layer types {sorted(unknown)} are treated as full attention")
    reused = sum(m.shared_linear_params(hidden) for m in out)
    if reused:
        notes.append(
            f"{sum(bool(m.shared_linear_params(hidden)) for m in out)} layers apply shared weights stored by earlier "
            f"layers ({reused:,} matmul weights in all): the total, the stored weights and the bytes read "
            "count them once (active parameters too), the FLOPs at every use"
        )
    return out


def _transformers_mlp_matrices(cfg: Any, hidden: int, inter: int) -> int | None:
    """How many hidden x ``inter`` matrices the MLP of transformers' decoder layer holds for ``cfg`` (3: gated,
    fused or not; 2: up and down only), read from a one-layer copy built on the meta device; None when the
    model cannot be built or its MLP is not a whole number of such matrices (then the family's reading stands).
    """
    try:
        import torch
        from transformers import AutoModelForCausalLM

        one = copy.deepcopy(cfg)
        one.num_hidden_layers = 1
        if isinstance(getattr(one, "layer_types", None), list):
            one.layer_types = one.layer_types[:1]
        with warnings.catch_warnings(), torch.device("meta"):
            warnings.simplefilter("ignore")
            model = AutoModelForCausalLM.from_config(one)
        stacks = [m for _, m in model.named_modules() if isinstance(m, torch.nn.ModuleList) and len(m) == 1]
        mlp = getattr(stacks[0][0], "mlp", None) if stacks else None
        if not isinstance(mlp, torch.nn.Module):
            return None
        weights = sum(m.weight.numel() for m in mlp.modules() if isinstance(m, torch.nn.Linear))
    except Exception:  # noqa: BLE001  (a model transformers cannot build here is read as its family says)
        return None
    ratio = weights / (hidden * inter)
    return round(ratio) if ratio == round(ratio) else None


def _attention_fields(att: AttentionSpec) -> dict[str, Any]:
    """The base ``AttentionSpec`` fields of ``att`` (a ``ParallelMixers`` takes its first part's)."""
    return {f.name: getattr(att, f.name) for f in fields(AttentionSpec)}


def _moe_layer_flags(
    cfg: Any, text_raw: dict[str, Any], num_layers: int, family: Family, notes: list[str]
) -> list[bool]:
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
    if freq != 1 and family.moe_layer_freq_ignored:
        notes.append(
            f"moe_layer_freq = {freq} is ignored by transformers' DeepseekV3 (every layer from "
            "first_k_dense_replace on is MoE), as here"
        )
        freq = 1
    return [
        i >= first_dense and i not in only_dense and (i + 1) % step == 0 and i % freq == 0 for i in range(num_layers)
    ]


def layer_mlps(
    cfg: Any, text_raw: dict[str, Any], family: Family, inter: int, source: str, notes: list[str]
) -> list[MlpSpec]:
    """Each layer's MLP: dense, or mixture-of-experts on the layers the config's pattern routes; none in a
    family without MLPs; the family's shared MLP beside the experts (or alone when there are none)."""
    num_layers = int(text_raw["num_hidden_layers"])
    if family.mlp_free:
        return [NoMlp()] * num_layers
    experts = attr(cfg, text_raw, "num_local_experts", "num_experts", "n_routed_experts")
    top_k = attr(cfg, text_raw, "num_experts_per_tok", "moe_topk", "experts_per_token")
    shared_mlp = int(attr(cfg, text_raw, family.shared_mlp_field) or 0) if family.shared_mlp_field else 0
    dense_width = int(attr(cfg, text_raw, family.dense_width_field) or inter) if family.dense_width_field else inter
    dense: MlpSpec = DenseMlp(intermediate_size=shared_mlp or dense_width)
    dense_only = not (isinstance(experts, int) and experts > 0)
    if not family.gated_mlp:
        dense = PlainMlp(intermediate_size=shared_mlp or dense_width)
    elif (
        family is LLAMA_LIKE
        and cfg is not None
        and dense_only
        and _transformers_mlp_matrices(cfg, int(text_raw["hidden_size"]), inter) == 2
    ):  # no module says how this model type's MLP reads: transformers' own layer says (up and down only)
        dense = PlainMlp(intermediate_size=inter)
    if dense_only:
        return [dense] * num_layers
    if not isinstance(top_k, int) or not 0 < top_k <= experts:
        raise InputError(f"num_experts_per_tok = {top_k!r} must be an integer in 1..{experts}", path=source)
    width = int(text_raw.get("moe_intermediate_size") or inter)
    shared = shared_mlp
    if text_raw.get("n_shared_experts"):
        shared = int(text_raw["n_shared_experts"]) * width
    elif text_raw.get("shared_expert_intermediate_size"):
        shared = int(text_raw["shared_expert_intermediate_size"])
    elif family.always_shared_expert:
        shared = inter  # Llama4TextMoe: shared_expert = Llama4TextMLP(config), intermediate_size wide
    moe = MoeMlp(
        intermediate_size=inter,
        experts=experts,
        k=top_k,
        expert_intermediate_size=width,
        shared_intermediate_size=shared,
    )
    flags = _moe_layer_flags(cfg, text_raw, num_layers, family, notes)
    return [moe if is_moe else dense for is_moe in flags]
