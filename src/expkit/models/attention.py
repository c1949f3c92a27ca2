"""Attention kinds: one class per kind, each answering every per-kind question about itself.

``GroupedQueryAttention`` covers MHA (kv heads = heads), GQA and MQA (one kv head); ``LatentAttention`` is
DeepSeek's multi-head latent attention. Any of them may have a sliding ``window`` or a ``chunk`` (Llama-4's
chunked attention). The recurrent mixers that take attention's place in hybrid models (Mamba, gated DeltaNet)
are in ``recurrent.py`` and answer the same questions. The questions: weights
(matmul shapes), cache elements per token and per sequence, FLOPs per cached token (decode) and per
(query, key) pair (prefill/train), activation traffic, and the tensors saved for backward. The stages
(memory, perf, finetune) ask these methods and never test a kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from expkit.models.saved import ActivationTerm, SavedActivationContext

__all__ = [
    "AttentionSpec",
    "CrossAttention",
    "EncoderAttention",
    "GroupedQueryAttention",
    "IndexedLatentAttention",
    "LatentAttention",
    "ParallelMixers",
]


@dataclass(frozen=True, kw_only=True)
class AttentionSpec:
    """One layer's attention; a base class: the kinds below answer the questions.

    ``window``: a sliding window in tokens (None = full attention); ``chunk``: chunked attention (Llama-4:
    a token sees only the keys of its own ``chunk``-token block; transformers caches at most the last chunk);
    ``qk_norm``: an RMSNorm on q and k per head (Qwen3, Gemma-3); ``output_gate``: the query projection also
    yields a per-channel sigmoid gate on the attention output (Qwen3-Next), doubling its width.
    """

    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    window: int | None = None
    chunk: int | None = None
    qk_norm: bool = False
    output_gate: bool = False
    kv_shared: bool = False  # attends to an earlier layer's cache and holds none (Gemma-3n's shared KV layers)
    # how transformers' attention of the family saves for backward (encoder-decoder families):
    # ``position_bias``: T5's relative bias added to the scores, so self-attention runs the eager path and a
    # cross-attention gets a zero bias as SDPA's float mask; ``o_input_copy``: the output projection reads its
    # own copy of the attention output (Whisper)
    position_bias: bool = False
    o_input_copy: bool = False
    causal: ClassVar[bool] = True  # a decoder's self-attention; an encoder's sees every token

    @property
    def kind(self) -> str:
        raise NotImplementedError

    @property
    def kv_cache_elements_per_token(self) -> int:
        """Cached elements per token in this layer."""
        raise NotImplementedError

    @property
    def decode_flop_per_cached_token(self) -> int:
        """FLOPs of one new token against one cached token (decode)."""
        raise NotImplementedError

    @property
    def pair_flop(self) -> int:
        """FLOPs of one (query, key) pair in prefill or training."""
        raise NotImplementedError

    @property
    def qkvo_elements_per_token(self) -> int:
        """Elements of Q, K, V and the output per token that a flash-style kernel reads or writes once."""
        raise NotImplementedError

    @property
    def rope_dim(self) -> int:
        """Width of the rotary tables (cos, sin) per token."""
        raise NotImplementedError

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        """(in, out) features of every projection matmul of this attention."""
        raise NotImplementedError

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Tensors this attention saves for backward, bytes per token."""
        raise NotImplementedError

    def cache_form(self) -> str:
        """The cached elements per token, as a formula in words."""
        raise NotImplementedError

    # -- answered from the above, the same for every kind --

    def source_linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        """(in, out) of the matmuls that run over the encoder's tokens instead of each decoder token (an
        encoder's whole attention, a cross-attention's k and v); none for a decoder's own attention."""
        return ()

    def sequence_tokens(self, context: int) -> int:
        """Tokens the queries of this attention run over in a prefill or training step of ``context`` tokens."""
        return context

    def qkvo_elements(self, context: int) -> int:
        """Q, K, V and output elements of one sequence of ``context`` tokens that a flash-style kernel moves."""
        return self.qkvo_elements_per_token * self.sequence_tokens(context)

    def linear_params(self, hidden: int) -> int:
        """Weights of the projection matmuls (biases and norms left out), the per-token and per-source ones."""
        return sum(i * o for i, o in (*self.linear_shapes(hidden), *self.source_linear_shapes(hidden)))

    def shared_linear_params(self, hidden: int) -> int:
        """Weights of this mixer's matmuls that an earlier layer stores and this layer applies again (Zamba2's
        shared transformer blocks): counted in FLOPs here, in stored and read weights there. 0 for every kind
        whose weights are its own."""
        return 0

    def token_linear_params(self, hidden: int) -> int:
        """Weights one decoder token multiplies by (the per-source matmuls left out)."""
        return sum(i * o for i, o in self.linear_shapes(hidden))

    @property
    def norm_params(self) -> int:
        """Weights of the mixer's own norms (q/k RMSNorm per head; MLA's norms on its two low-rank latents)."""
        return 2 * self.head_dim if self.qk_norm else 0

    def matmul_io_per_token(self, hidden: int) -> int:
        """Activation elements the projections read and write per token (in + out features)."""
        return sum(i + o for i, o in self.linear_shapes(hidden))

    @property
    def _span(self) -> int | None:
        """The most tokens this layer keeps: its window or its chunk (None: all)."""
        return self.window or self.chunk

    def cached_tokens(self, context: int) -> int:
        """Tokens this layer keeps (and a decode step reads) at ``context``: a sliding window or a chunk caps
        them (transformers' sliding and chunked cache layers keep the last window - 1 tokens plus the new one)."""
        span = self._span
        return context if span is None else min(context, span)

    def cache_elements(self, context: int) -> int:
        """Cached elements of one sequence at ``context`` tokens this layer holds (none when it shares an
        earlier layer's cache)."""
        return 0 if self.kv_shared else self.kv_cache_elements_per_token * self.cached_tokens(context)

    def cache_read_bytes(self, context: int, dtype_bytes: int) -> int:
        """Cache bytes a decode step of one sequence reads in this layer: the cache it attends to, its own or
        the one it shares."""
        return self.kv_cache_elements_per_token * self.cached_tokens(context) * dtype_bytes

    def cache_bytes(self, context: int, dtype_bytes: int) -> int:
        """Cache bytes of one sequence at ``context`` tokens, every element at ``dtype_bytes``."""
        return self.cache_elements(context) * dtype_bytes

    def causal_pairs(self, context: int) -> float:
        """(query, key) pairs of causal attention over ``context`` tokens: T^2/2; with a window W < T,
        W^2/2 + (T - W) W (each query sees at most W keys); with chunks of C, (T // C) C^2/2 + (T mod C)^2/2
        (each query sees the keys of its own chunk up to itself)."""
        if self.chunk is not None and self.chunk < context:
            c, rest = self.chunk, context % self.chunk
            return (context // c) * c * c / 2 + rest * rest / 2
        if self.window is None or self.window >= context:
            return context * context / 2
        w = self.window
        return w * w / 2 + (context - w) * w

    def cache_formula(self, layers: int, context: int) -> str:
        """``layers`` such layers' cache at ``context`` tokens, in words."""
        if self.window:
            toks = f"min({context:,}, window {self.window:,})"
        elif self.chunk:
            toks = f"min({context:,}, chunk {self.chunk:,})"
        else:
            toks = f"{context:,}"
        return f"{layers} {self.kind} layers * {self.cache_form()} * {toks} tokens"

    def assumptions(self) -> tuple[str, ...]:
        """What the speed model assumes about this kind (said once per kind in a roofline)."""
        if self.window:
            return ("sliding-window layers cache and read at most their window of tokens",)
        if self.chunk:
            return (
                "chunked-attention layers cache and read at most one chunk of tokens (transformers' chunked "
                "cache); a query attends to the keys of its own chunk",
            )
        return ()

    @property
    def label(self) -> str:
        return (
            self.kind
            + (f" window {self.window}" if self.window else "")
            + (f" chunk {self.chunk}" if self.chunk else "")
        )

    def _qk_norm_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        if not self.qk_norm:
            return []
        hq, kv, a = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim, ctx.act
        b = (4 * hq + 4 * self.num_heads + a * hq) + (4 * kv + 4 * self.num_kv_heads + a * kv)
        return [ActivationTerm("q/k RMSNorm", b, f"per-head norms on q ({hq}) and k ({kv})")]


@dataclass(frozen=True, kw_only=True)
class GroupedQueryAttention(AttentionSpec):
    """Softmax attention with ``num_kv_heads`` K/V heads shared by groups of query heads: MHA when they equal
    the heads, MQA when there is one. Cache: K and V per kv head (Pope et al. 2022, sec. 2)."""

    @property
    def kind(self) -> str:
        if self.num_kv_heads == self.num_heads:
            return "mha"
        return "mqa" if self.num_kv_heads == 1 else "gqa"

    @property
    def kv_cache_elements_per_token(self) -> int:
        return self.num_kv_heads * (self.head_dim + self.v_head_dim)

    @property
    def decode_flop_per_cached_token(self) -> int:
        return 2 * self.num_heads * (self.head_dim + self.v_head_dim)  # QK^T and AV

    @property
    def pair_flop(self) -> int:
        return 2 * self.num_heads * (self.head_dim + self.v_head_dim)

    @property
    def qkvo_elements_per_token(self) -> int:
        return self.num_heads * (self.head_dim + self.v_head_dim) + self.num_kv_heads * (
            self.head_dim + self.v_head_dim
        )

    @property
    def rope_dim(self) -> int:
        return self.head_dim

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        hq, hk, hv = (
            self.num_heads * self.head_dim,
            self.num_kv_heads * self.head_dim,
            self.num_kv_heads * self.v_head_dim,
        )
        q_out = 2 * hq if self.output_gate else hq  # the gate rides on q_proj (Qwen3-Next)
        if self.kv_shared:  # no k/v projection of its own: it attends to an earlier layer's keys and values
            return ((hidden, q_out), (self.num_heads * self.v_head_dim, hidden))
        return ((hidden, q_out), (hidden, hk), (hidden, hv), (self.num_heads * self.v_head_dim, hidden))

    def cache_form(self) -> str:
        return f"2 * {self.num_kv_heads} kv heads * {self.head_dim}"

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        a, heads, h = ctx.act, self.num_heads, ctx.hidden_size
        hq, kv = heads * self.head_dim, self.num_kv_heads * self.head_dim
        b, f = ctx.linear_inputs(ctx.savers("attn_in"), h, "h")
        terms = [ActivationTerm("attn_in linear inputs", b, f), *self._qk_norm_terms(ctx)]
        if self.position_bias:  # T5: the eager path with its bias, in fp32 even under autocast (measured)
            terms.append(
                ActivationTerm(
                    "attention (T5 eager, fp32)",
                    4 * (hq + 2 * kv) + ctx.cast_bytes * hq + 4 * heads * ctx.seq,
                    f"q, k, v 4*{hq} each + output {ctx.cast_bytes}*{hq} (o's input) + probs 4*{heads}*T",
                )
            )
            if self.causal:  # the decoder's bool causal mask, per layer (measured)
                terms.append(ActivationTerm("causal mask", ctx.seq, "bool 1 * T"))
            return terms
        if ctx.attention == "sdpa":
            terms.append(
                ActivationTerm(
                    "attention (sdpa)",
                    a * (2 * hq + 2 * kv) + 4 * heads,
                    f"q, out {a}*{hq} each + k, v {a}*{kv} each + logsumexp 4*{heads}",
                )
            )
        else:
            probs = 4 * heads * ctx.seq + (a * heads * ctx.seq if a != 4 else 0)
            terms.append(
                ActivationTerm(
                    "attention (eager)",
                    a * 4 * hq + probs,
                    f"q, repeated k, v, out {a}*{hq} each + probs (4{'+' + str(a) if a != 4 else ''})*{heads}*T",
                )
            )
        terms.append(self._o_input_term(ctx))
        return terms

    def _o_input_term(self, ctx: SavedActivationContext) -> ActivationTerm:
        """The output projection's saved input: a view of the attention output, its own 16-bit cast when only
        adapters train under autocast, or a copy of it (``o_input_copy``, or T5's eager path)."""
        hq, n_o = self.num_heads * self.v_head_dim, ctx.savers("o_in")
        if self.o_input_copy and n_o and not (ctx.autocast and not ctx.full):
            return ActivationTerm("o_proj input", ctx.act * hq, f"a copy of the attention output {ctx.act}*{hq}")
        o_extra = (n_o * 2 * hq) if (ctx.autocast and not ctx.full) else 0
        return ActivationTerm(
            "o_proj input", o_extra, "a view of the attention output (0)" if not o_extra else f"{n_o} * cast 2*{hq}"
        )


@dataclass(frozen=True, kw_only=True)
class LatentAttention(AttentionSpec):
    """DeepSeek's multi-head latent attention: K and V rebuilt from a ``kv_lora_rank`` latent, plus a
    ``qk_rope_head_dim`` rotary key shared by all heads; the query through a ``q_lora_rank`` latent when
    set. ``head_dim`` is the query/key width per head (nope + rope). Cache: the latent and the rotary key
    (DeepSeek-V2 paper sec. 2.1; transformers 5 stores them before ``kv_b_proj`` expands them)."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    q_lora_rank: int | None = None

    @property
    def kind(self) -> str:
        return "mla"

    @property
    def kv_cache_elements_per_token(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def decode_flop_per_cached_token(self) -> int:
        # absorbed form (attention over the latent, as DeepSeek and vLLM serve it): scores over rank + rope,
        # values over rank
        return 2 * self.num_heads * (self.kv_lora_rank + self.qk_rope_head_dim) + 2 * self.num_heads * self.kv_lora_rank

    @property
    def pair_flop(self) -> int:
        return 2 * self.num_heads * (self.head_dim + self.v_head_dim)  # expanded per head, as transformers runs it

    @property
    def qkvo_elements_per_token(self) -> int:
        return self.num_heads * (2 * self.head_dim + 2 * self.v_head_dim)

    @property
    def rope_dim(self) -> int:
        return self.qk_rope_head_dim

    @property
    def norm_params(self) -> int:
        return (self.q_lora_rank or 0) + self.kv_lora_rank  # q_a_layernorm, kv_a_layernorm

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        h, heads, qk, v = hidden, self.num_heads, self.head_dim, self.v_head_dim
        q = ((h, self.q_lora_rank), (self.q_lora_rank, heads * qk)) if self.q_lora_rank else ((h, heads * qk),)
        return (
            *q,
            (h, self.kv_lora_rank + self.qk_rope_head_dim),
            (self.kv_lora_rank, heads * (self.qk_nope_head_dim + v)),
            (heads * v, h),
        )

    def cache_form(self) -> str:
        return f"latent {self.kv_lora_rank} + rope key {self.qk_rope_head_dim}"

    def assumptions(self) -> tuple[str, ...]:
        return (
            "MLA: the cache holds the latent + rotary key (kv_lora_rank + qk_rope_head_dim per "
            "token-layer); decode attends in the absorbed form (over the latent, as DeepSeek and "
            "vLLM serve it); prefill/train expand K, V per head as transformers does",
            *super().assumptions(),
        )

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        a, heads, h, cast = ctx.act, self.num_heads, ctx.hidden_size, ctx.cast_bytes
        qr, kr, qk, v = self.q_lora_rank or 0, self.kv_lora_rank, self.head_dim, self.v_head_dim
        n_in = 2 if qr else 1  # q_a_proj (or q_proj) and kv_a_proj_with_mqa read the normed hidden state
        b, f = ctx.linear_inputs(n_in, h, "h")
        terms = [ActivationTerm("MLA down-projection inputs", b, f)]
        lat = (4 * kr + 4 + a * kr) + cast * kr
        if qr:
            lat += (4 * qr + 4 + a * qr) + cast * qr
        terms.append(
            ActivationTerm(
                "MLA latent norms + up-projection inputs",
                lat,
                f"RMSNorm on q rank {qr} and kv rank {kr} (x 4, rsqrt 4, normed {a}) + the "
                "16-bit/fp32 input of q_b_proj and kv_b_proj",
            )
        )
        # CPU SDPA cannot use its flash kernel when q and v head dims differ: the math path stores probs
        probs_stored = ctx.attention == "eager" or (ctx.device == "cpu" and qk != v)
        qkv = a * heads * qk * 2 + a * heads * self.qk_nope_head_dim + a * heads * v
        terms.append(
            ActivationTerm(
                "MLA q, k, kv_b output",
                qkv,
                f"q and k {a}*{heads}*{qk} each + kv_b_proj output {a}*{heads}*"
                f"({self.qk_nope_head_dim}+{v}) (v is a view of it)",
            )
        )
        terms.append(
            ActivationTerm(
                "o_proj input",
                cast * heads * v if ctx.autocast or not ctx.full else a * heads * v,
                f"attention output {heads}*{v}",
            )
        )
        if probs_stored:
            terms.append(
                ActivationTerm(
                    "attention probabilities",
                    4 * heads * ctx.seq,
                    f"4*{heads}*T (eager, or SDPA's math fallback on the CPU)",
                )
            )
        else:
            terms.append(ActivationTerm("attention logsumexp", 4 * heads, f"4*{heads}"))
        return terms


@dataclass(frozen=True, kw_only=True)
class EncoderAttention(GroupedQueryAttention):
    """An encoder's bidirectional self-attention (T5, BART, Whisper): every token sees every token of the
    ``source_tokens``-long input (None: as many as the context), and the encoder runs once per input, so it
    keeps no cache. Its layer's matmuls run over the source tokens (the description keeps encoder layers apart)."""

    source_tokens: int | None = None
    causal: ClassVar[bool] = False

    @property
    def kind(self) -> str:
        return "encoder " + super().kind

    def source_len(self, context: int) -> int:
        return self.source_tokens or context

    def cache_elements(self, context: int) -> int:
        return 0

    def cache_read_bytes(self, context: int, dtype_bytes: int) -> int:
        return 0

    def cached_tokens(self, context: int) -> int:
        return 0

    def causal_pairs(self, context: int) -> float:
        s = self.source_len(context)
        return float(s * s)  # bidirectional: every (query, key) pair of the source

    def sequence_tokens(self, context: int) -> int:
        return self.source_len(context)

    def cache_formula(self, layers: int, context: int) -> str:
        return f"{layers} {self.kind} layers hold no cache"


@dataclass(frozen=True, kw_only=True)
class CrossAttention(GroupedQueryAttention):
    """A decoder layer's attention over the encoder's output (T5's EncDecAttention, BART's and Whisper's
    encoder_attn). q and o run per decoder token (``linear_shapes``); k and v once over the
    ``source_tokens`` encoder outputs (``source_linear_shapes``; None: as many as the context), and their
    result is the layer's cross-attention cache, fixed by the encoder's length however many tokens are
    generated (transformers' EncoderDecoderCache.cross_attention_cache)."""

    source_tokens: int | None = None

    @property
    def kind(self) -> str:
        return "cross-attention " + super().kind

    def source_len(self, context: int) -> int:
        return self.source_tokens or context

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        hq = self.num_heads * self.head_dim
        return ((hidden, hq), (self.num_heads * self.v_head_dim, hidden))

    def source_linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        return ((hidden, self.num_kv_heads * self.head_dim), (hidden, self.num_kv_heads * self.v_head_dim))

    def cached_tokens(self, context: int) -> int:
        return self.source_len(context)

    def causal_pairs(self, context: int) -> float:
        return float(context * self.source_len(context))  # every decoder token sees every encoder output

    def qkvo_elements(self, context: int) -> int:
        qo = self.num_heads * (self.head_dim + self.v_head_dim) * context
        return qo + self.num_kv_heads * (self.head_dim + self.v_head_dim) * self.source_len(context)

    def cache_formula(self, layers: int, context: int) -> str:
        src = f"{self.source_tokens:,} encoder positions" if self.source_tokens else f"{context:,} encoder tokens"
        return f"{layers} {self.kind} layers * {self.cache_form()} * {src}"

    def assumptions(self) -> tuple[str, ...]:
        return (
            "encoder-decoder: the encoder runs once per input (its matmuls and the cross-attention k/v "
            "projections over the source tokens are in prefill and train, not in decode); each decoder layer "
            "keeps a self-attention cache that grows with the generated tokens and a cross-attention cache "
            "fixed by the encoder's length",
        )

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        a, heads, h = ctx.act, self.num_heads, ctx.hidden_size
        hq, kv = heads * self.head_dim, self.num_kv_heads * self.head_dim
        per_src = ctx.source / ctx.seq if ctx.seq else 1.0  # encoder outputs per decoder token
        bq, fq = ctx.linear_inputs(1 if ctx.savers("attn_in") else 0, h, "h")
        # k and v read the encoder's output: in fp32 every layer shares that one tensor (saved once, outside
        # the layers); under autocast each linear saves its own 16-bit cast of it
        n_kv = 2 if ctx.savers("attn_in") and ctx.autocast else 0
        terms = [
            ActivationTerm("cross q input", bq, fq),
            ActivationTerm("cross k, v inputs", n_kv * 2 * h * per_src, f"{n_kv} casts 2h per source token"),
        ]
        if ctx.attention == "sdpa":
            terms.append(
                ActivationTerm(
                    "cross-attention (sdpa)",
                    a * 2 * hq + 4 * heads + a * 2 * kv * per_src,
                    f"q, out {a}*{hq} each + logsumexp 4*{heads} + k, v {a}*{kv} per source token",
                )
            )
        else:
            probs = (4 + (a if a != 4 else 0)) * heads * ctx.source
            terms.append(
                ActivationTerm(
                    "cross-attention (eager)",
                    a * 2 * hq + probs + a * 2 * kv * per_src,
                    f"q, out {a}*{hq} each + probs over {ctx.source} sources + k, v per source token",
                )
            )
        terms.append(self._o_input_term(ctx))
        return terms


@dataclass(frozen=True, kw_only=True)
class IndexedLatentAttention(LatentAttention):
    """DeepSeek-V3.2's latent attention with its sparse-attention indexer (DSA): beside the MLA latent, the
    indexer keeps its own key cache, ``index_head_dim`` elements per token and layer (transformers'
    ``DynamicIndexedLayer.indexer_keys``), projects ``index_heads`` queries of that width from the q latent
    (wq_b), one key from the hidden state (wk, LayerNorm) and a weight per head (weights_proj), and scores every
    cached token to pick ``index_topk`` of them. It runs without gradient (nothing saved for backward)."""

    index_heads: int
    index_head_dim: int
    index_topk: int

    @property
    def kind(self) -> str:
        return "mla+indexer"

    @property
    def kv_cache_elements_per_token(self) -> int:
        return super().kv_cache_elements_per_token + self.index_head_dim

    @property
    def _index_flop_per_key(self) -> int:
        return 2 * self.index_heads * self.index_head_dim + 2 * self.index_heads  # q . k per head, the weighted sum

    @property
    def decode_flop_per_cached_token(self) -> int:
        return super().decode_flop_per_cached_token + self._index_flop_per_key

    @property
    def pair_flop(self) -> int:
        return super().pair_flop + self._index_flop_per_key

    @property
    def norm_params(self) -> int:
        return super().norm_params + 2 * self.index_head_dim  # the indexer's k LayerNorm (weight, bias)

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        q_in = self.q_lora_rank or hidden
        indexer = (
            (q_in, self.index_heads * self.index_head_dim),
            (hidden, self.index_head_dim),
            (hidden, self.index_heads),
        )
        return (*super().linear_shapes(hidden), *indexer)

    def cache_form(self) -> str:
        return f"{super().cache_form()} + indexer key {self.index_head_dim}"

    def assumptions(self) -> tuple[str, ...]:
        return (
            f"DSA: the indexer caches its own key ({self.index_head_dim} per token-layer) and scores every cached "
            f"token to pick {self.index_topk}; the attention is counted dense over the cache, as transformers runs "
            "it (a sparse kernel reads only the picked latents)",
            *super().assumptions(),
        )


@dataclass(frozen=True, kw_only=True)
class ParallelMixers(AttentionSpec):
    """Several mixers side by side on one layer's input, their outputs summed (Falcon-H1: attention and a
    Mamba-2 mixer in every layer). ``LayerSpec.mixers`` lists the ``parts``, so each part answers for itself
    wherever a layer's mixers are summed (cache, FLOPs, weights read); the questions asked of a layer's
    ``attention`` directly are answered here as sums over the parts. The attention fields are the first
    part's."""

    parts: tuple[AttentionSpec, ...]

    @property
    def kind(self) -> str:
        return " + ".join(p.kind for p in self.parts)

    @property
    def kv_cache_elements_per_token(self) -> int:
        return sum(p.kv_cache_elements_per_token for p in self.parts)

    @property
    def decode_flop_per_cached_token(self) -> int:
        return sum(p.decode_flop_per_cached_token for p in self.parts)

    @property
    def pair_flop(self) -> int:
        return sum(p.pair_flop for p in self.parts)

    @property
    def qkvo_elements_per_token(self) -> int:
        return sum(p.qkvo_elements_per_token for p in self.parts)

    @property
    def rope_dim(self) -> int:
        return max(p.rope_dim for p in self.parts)

    @property
    def norm_params(self) -> int:
        return sum(p.norm_params for p in self.parts)

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        return tuple(s for p in self.parts for s in p.linear_shapes(hidden))

    def shared_linear_params(self, hidden: int) -> int:
        return sum(p.shared_linear_params(hidden) for p in self.parts)

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        return [t for p in self.parts for t in p.saved_terms(ctx)]

    def cache_form(self) -> str:
        return " + ".join(p.cache_form() for p in self.parts)

    def cache_elements(self, context: int) -> int:
        return sum(p.cache_elements(context) for p in self.parts)

    def cache_bytes(self, context: int, dtype_bytes: int) -> int:
        return sum(p.cache_bytes(context, dtype_bytes) for p in self.parts)

    def cache_read_bytes(self, context: int, dtype_bytes: int) -> int:
        return sum(p.cache_read_bytes(context, dtype_bytes) for p in self.parts)

    def cache_formula(self, layers: int, context: int) -> str:
        return " + ".join(p.cache_formula(layers, context) for p in self.parts)

    def assumptions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a for p in self.parts for a in p.assumptions()))

    @property
    def label(self) -> str:
        return " + ".join(p.label for p in self.parts)
