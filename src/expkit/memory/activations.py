"""Activation memory of Llama/Qwen2-style decoder blocks as Hugging Face implements them, term by term.

Each term is a tensor that autograd saves for backward, in bytes per token, derived by reading
transformers' ``LlamaDecoderLayer``/``Qwen2DecoderLayer`` and peft's ``lora.Linear`` and checked against
``saved_tensors_hooks`` measurements (``expkit.memory.replica``). Beside it: the Korthikanti et al.
formula, which assumes a GPT-3 block (4h MLP, GeLU, LayerNorm, dropout masks) and no vocabulary term.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from expkit.models.description import ModelDescription
from expkit.models.saved import LINEAR_GROUPS, ActivationTerm, SavedActivationContext

__all__ = [
    "LINEAR_GROUPS",
    "ActivationEstimate",
    "ActivationQuery",
    "ActivationTerm",
    "estimate_activations",
    "korthikanti_bytes",
]

PRECISIONS = ("bf16-mixed", "fp16-mixed", "fp32")
# encoder-decoder module names read as the Llama-style linear they play (T5: q, k, v, o, wi_0, wi_1, wo;
# BART/Whisper: out_proj, fc1, fc2), for which linears save their input under LoRA
TARGET_ALIASES = {
    "q": "q_proj",
    "k": "k_proj",
    "v": "v_proj",
    "o": "o_proj",
    "out_proj": "o_proj",
    "wi_0": "gate_proj",
    "wi_1": "up_proj",
    "wi": "up_proj",
    "wo": "down_proj",
    "fc1": "up_proj",
    "fc2": "down_proj",
}


@dataclass(frozen=True)
class ActivationEstimate:
    """Saved-for-backward bytes of one forward pass at (batch, seq), by layer and fixed part.

    ``layer_kinds`` is (label, layers, bytes of one such layer at (batch, seq)) per layer kind;
    ``layer_terms`` the terms of the largest kind. ``layer_bytes`` is the largest layer at (batch, seq);
    ``stored_bytes`` all layers as stored between forward and backward (with checkpointing: each layer's
    input only); ``recompute_bytes`` the one layer rebuilt in backward under checkpointing (0 otherwise).
    ``fixed_bytes`` covers embedding ids, rotary tables, the final norm and the LM head input; the
    vocabulary-sized loss tensors are ``loss_bytes``.
    """

    batch: int
    seq: int
    num_layers: int
    precision: str
    grad_ckpt: bool
    layer_kinds: tuple[tuple[str, int, int], ...]  # (label, layers, bytes of one layer)
    layer_terms: tuple[ActivationTerm, ...]
    fixed_terms: tuple[ActivationTerm, ...]
    layer_bytes: int
    stored_bytes: int
    recompute_bytes: int
    fixed_bytes: int
    loss_bytes: int
    korthikanti_total_bytes: int
    korthikanti_formula: str

    @property
    def total_bytes(self) -> int:
        """Everything saved for backward at the end of the forward pass, loss tensors included."""
        return self.stored_bytes + self.fixed_bytes + self.loss_bytes


def korthikanti_bytes(
    *, seq: int, batch: int, hidden: int, heads: int, num_layers: int, with_scores: bool = True
) -> int:
    """Activation bytes of a GPT-3-style model in 16-bit, no recomputation, no tensor parallelism.

    ``L * s * b * h * (34 + 5 a s / h)``; the ``5 a s / h`` term is the attention-score matrices, which
    flash/SDPA kernels do not store (``with_scores=False`` drops it).

    Reference: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    eq. (1) and sec. 4.1.
    """
    per_layer = 34 * seq * batch * hidden + (5 * heads * seq * seq * batch if with_scores else 0)
    return num_layers * per_layer


def _mode(precision: str, method: str) -> tuple[int, int, bool]:
    """(residual-stream bytes, activation bytes, autocast) for a precision and method.

    fp32: everything 4 B. *-mixed, full: fp32 parameters under autocast, residual stream fp32, matmul
    outputs 2 B. *-mixed, lora: the base model is held in 16 bit (as LoRA recipes load it), adapters fp32
    under autocast, residual stream 2 B. *-mixed, qlora: peft's ``prepare_model_for_kbit_training`` (the
    QLoRA recipe) casts every parameter that is not 4-bit to fp32, the embedding among them, so the residual
    stream is fp32 (4 B) as under a full fine-tune.
    """
    if precision == "fp32":
        return 4, 4, False
    return (2 if method == "lora" else 4), 2, True


@dataclass(frozen=True)
class ActivationQuery:
    """The settings of one forward pass whose saved tensors are estimated.

    ``batch``, ``seq``: micro-batch size and sequence length; ``precision``: ``bf16-mixed`` /
    ``fp16-mixed`` (autocast) or ``fp32``; ``method``: ``full``, ``lora`` or ``qlora`` (frozen base: frozen
    linears and norms save less); ``lora_targets``: module names adapted (``all-linear`` = every linear of the
    block); ``lora_r``: LoRA rank (each adapter saves its r-wide intermediate); ``grad_ckpt``: HF gradient
    checkpointing per decoder layer (stores each layer's input only); ``attention``: ``sdpa`` (no T x T matrix
    stored) or ``eager``; ``device``: ``cuda`` or ``cpu`` (kernels differ: see the kinds' ``saved_terms``).
    Variants: ``dataclasses.replace(query, grad_ckpt=True)``.
    """

    batch: int = 1
    seq: int = 2048
    precision: str = "bf16-mixed"
    method: str = "full"
    lora_targets: tuple[str, ...] = ("all-linear",)
    lora_r: int = 16
    grad_ckpt: bool = False
    attention: str = "sdpa"
    device: str = "cuda"

    def context(self, hidden_size: int) -> SavedActivationContext:
        """The per-layer context the kinds' ``saved_terms`` read."""
        resid, a, autocast = _mode(self.precision, self.method)
        all_lin = tuple(n for g in LINEAR_GROUPS.values() for n in g)
        named = {TARGET_ALIASES.get(t, t) for t in self.lora_targets}
        targeted = set(all_lin if self.lora_targets == ("all-linear",) else named) & set(all_lin)
        # the installed peft's all-linear wraps transformers 5's fused expert parameters (tested in tests/models)
        experts = self.lora_targets == ("all-linear",) or bool({"experts", "gate_up_proj"} & set(self.lora_targets))
        return SavedActivationContext(
            hidden_size=hidden_size,
            seq=self.seq,
            tokens=self.batch * self.seq,
            resid=resid,
            act=a,
            autocast=autocast,
            full=self.method == "full",
            targeted=frozenset(targeted),
            experts_targeted=experts,
            lora_r=self.lora_r,
            attention=self.attention,
            device=self.device,
        )


def estimate_activations(desc: ModelDescription, query: ActivationQuery) -> ActivationEstimate:
    """Bytes saved for backward by one forward pass of an HF decoder, summed over the model's layer kinds;
    each kind's spec (``expkit.models``) says what its layers save.

    Args:
        desc: the model description.
        query: batch, sequence, precision, method, LoRA, checkpointing, attention kernel and device.

    Returns:
        ActivationEstimate with the terms and their formulas.

    Example:
        >>> from expkit.models import load_model_description
        >>> a = estimate_activations(load_model_description("llama-2-7b"), ActivationQuery(batch=1, seq=4096))
        >>> round(a.korthikanti_total_bytes / 2**30, 1)  # the formula without the s^2 term: 17.0
        17.0

    Reference: Korthikanti et al. 2022 eq. (1) for the comparison column.
    """
    q, h = query, desc.hidden_size
    source = desc.source_tokens(q.seq)  # an encoder-decoder's encoder tokens per sequence (0: none)
    ctx = replace(q.context(h), source=source)
    enc_ctx = replace(ctx, seq=source, tokens=q.batch * source, source=0)
    tokens = ctx.tokens
    kinds = [(layer.label, count, layer.saved_terms(ctx), tokens) for layer, count in desc.layer_groups()]
    kinds += [
        (layer.label, count, layer.saved_terms(enc_ctx), enc_ctx.tokens) for layer, count in desc.encoder_layer_groups()
    ]
    per_kind_bytes = [
        (label, count, int(sum(t.bytes_per_token for t in terms) * n)) for label, count, terms, n in kinds
    ]
    layer_bytes = max(b for _, _, b in per_kind_bytes)  # the largest layer (rebuilt under checkpointing)
    terms = max(kinds, key=lambda k: sum(t.bytes_per_token for t in k[2]) * k[3])[2]
    if q.grad_ckpt:
        layer_inputs = desc.num_layers * tokens + len(desc.encoder_layers) * enc_ctx.tokens
        stored, recompute = ctx.resid * h * layer_inputs, layer_bytes
        layer_terms = (ActivationTerm("checkpointed layer input", ctx.resid * h, f"{ctx.resid}h per layer"), *terms)
    else:
        stored, recompute = sum(c * b for _, c, b in per_kind_bytes), 0
        layer_terms = tuple(terms)
    fixed = _encoder_decoder_fixed_terms(desc, q, ctx) if desc.stacks is not None else _fixed_terms(desc, q, ctx)
    fixed_bytes = int(sum(t.bytes_per_token for t in fixed) * tokens)
    loss_bytes = 4 * desc.vocab_size * tokens  # fp32 log-probs saved by log_softmax (HF upcasts logits)
    fixed.append(ActivationTerm("log-probs (fp32)", 4 * desc.vocab_size, f"4 * vocab {desc.vocab_size}"))
    eager = q.attention == "eager"
    k = sum(  # each group of decoder layers with its own heads
        korthikanti_bytes(
            seq=q.seq, batch=q.batch, hidden=h, heads=layer.attention.num_heads, num_layers=n, with_scores=eager
        )
        for layer, n in desc.layer_groups()
    )
    k_formula = (
        "L s b h (34 + 5 a s / h), 16-bit, GPT-3 block (4h GeLU MLP, LayerNorm, dropout masks), "
        "no vocabulary term" + ("" if eager else "; s^2 term dropped (sdpa/flash)")
    )
    return ActivationEstimate(
        batch=q.batch,
        seq=q.seq,
        num_layers=desc.num_layers,
        precision=q.precision,
        grad_ckpt=q.grad_ckpt,
        layer_kinds=tuple(per_kind_bytes),
        layer_terms=layer_terms,
        fixed_terms=tuple(fixed),
        layer_bytes=layer_bytes,
        stored_bytes=stored,
        recompute_bytes=recompute,
        fixed_bytes=fixed_bytes,
        loss_bytes=loss_bytes,
        korthikanti_total_bytes=k,
        korthikanti_formula=k_formula,
    )


def _fixed_terms(desc: ModelDescription, q: ActivationQuery, ctx: SavedActivationContext) -> list[ActivationTerm]:
    """Per-token terms outside the decoder layers: ids, rotary tables (one pair per model, as wide as the
    first layer's: transformers computes them once, before the layers), the final norm, the head's input."""
    h, resid = desc.hidden_size, ctx.resid
    norm_b, norm_f = ctx.norm_bytes(h)
    rope_dim = desc.layers[0].attention.rope_dim
    head_saves = ctx.full or "lm_head" in ctx.targeted
    fixed = [
        ActivationTerm("input ids", 8, "int64 8"),
        ActivationTerm(
            "rotary cos, sin",
            0 if q.grad_ckpt else 2 * resid * rope_dim,
            "recomputed inside each checkpoint (0)" if q.grad_ckpt else f"2 * {resid} * head_dim",
        ),
        ActivationTerm("final RMSNorm", norm_b, norm_f),
        ActivationTerm(
            "lm_head input", ctx.cast_bytes * h if head_saves else 0, "16-bit cast 2h" if ctx.autocast else "4h"
        ),
        ActivationTerm("labels", 8, "int64 8"),
    ]
    if not ctx.full and not q.grad_ckpt:
        fixed.append(
            ActivationTerm(
                "layer 0 input norm",
                -norm_b,
                "frozen embedding output needs no grad: layer 0's first norm saves nothing",
            )
        )
    return fixed


def _encoder_decoder_fixed_terms(
    desc: ModelDescription, q: ActivationQuery, ctx: SavedActivationContext
) -> list[ActivationTerm]:
    """Per decoder token, the terms outside an encoder-decoder's layers (a source-token term times
    source / seq): ids, position ids, T5's relative-bias bucket ids, embedding and final norms, the encoder
    output the cross-attentions share (fp32), Whisper's convolutions, the head's input. Under LoRA the frozen
    lookups, convolutions and embedding norms save nothing (no gradient flows into them) and neither does each
    pre-norm stack's first norm. Read off saved-tensor hooks on tiny T5, BART and Whisper replicas
    (tests/memory/test_encoder_decoder.py)."""
    st, h, a, T = desc.stacks, desc.hidden_size, ctx.act, q.seq
    assert st is not None
    r, full = ctx.source / T, ctx.full
    norm_b, norm_f = (ctx.layer_norm_bytes if st.layer_norm else ctx.norm_bytes)(h)
    text_encoder = not st.mel_bins
    ids = 8 + (8 * r if text_encoder else 0)
    positions = 8 * (r * st.learned_positions[0] + st.learned_positions[1])
    terms = [
        ActivationTerm("input ids", ids if full else 0, "int64 8 (decoder) + 8 per source token (0: frozen lookup)"),
        ActivationTerm("labels", 8, "int64 8"),
        ActivationTerm(
            "position ids", positions if full else 0, "int64 8 per token of each stack with learned positions"
        ),
    ]
    if st.relative_bias:
        heads = st.cross_attention.num_heads
        bucket_ids = 8 * ctx.source * r + 8 * T if full else 0
        # the cross-attentions' zero bias is SDPA's saved mask, unless dropout sends SDPA down the CPU math path
        zero_bias = 0 if (st.probs_dropout and ctx.device == "cpu") else a * heads * ctx.source
        terms.append(
            ActivationTerm(
                "relative-bias bucket ids, cross zero bias",
                bucket_ids + zero_bias,
                f"int64 8 * {ctx.source} per source token, 8 * {T} per decoder token (full), and the zero "
                f"bias every cross-attention gets as SDPA's mask {a} * {heads} * {ctx.source}",
            )
        )
    n_norms = (1 + r) * ((st.embedding_norm if full else 0) + st.final_norm)
    terms.append(ActivationTerm("embedding / final norms", n_norms * norm_b, f"{n_norms:g} * ({norm_f})"))
    if not full and not q.grad_ckpt and st.final_norm:  # pre-norm stacks: the first norm reads a frozen lookup
        terms.append(ActivationTerm("each stack's first norm", -(1 + r) * norm_b, "its input needs no grad (LoRA)"))
    if not ctx.autocast:
        terms.append(ActivationTerm("encoder output (cross k, v input)", 4 * h * r, "4h per source token, shared"))
    if st.mel_bins and full:
        conv = ctx.cast_bytes * 2 * st.mel_bins + a * 5 * h
        terms.append(
            ActivationTerm(
                "encoder convolutions",
                conv * r,
                f"per position: input {ctx.cast_bytes}*2*{st.mel_bins} + conv/GELU outputs {a}*5h",
            )
        )
    if st.dropout:  # on the residual stream: a bool mask on CUDA, noise of the stream's dtype on the CPU
        n = (1 + r) * ((st.stack_dropouts[0] if full else 0) + st.stack_dropouts[1])
        m = 1 if ctx.device == "cuda" else ctx.resid
        terms.append(ActivationTerm("stack dropout masks", n * m * h, f"{n:g} dropouts outside the layers * {m} B * h"))
    head_saves = ctx.full or "lm_head" in ctx.targeted
    terms.append(
        ActivationTerm(
            "lm_head input", ctx.cast_bytes * h if head_saves else 0, "16-bit cast 2h" if ctx.autocast else "4h"
        )
    )
    return terms
