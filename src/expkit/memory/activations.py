"""Activation memory of Llama/Qwen2-style decoder blocks as Hugging Face implements them, term by term.

Each term is a tensor that autograd saves for backward, in bytes per token, derived by reading
transformers' ``LlamaDecoderLayer``/``Qwen2DecoderLayer`` and peft's ``lora.Linear`` and checked against
``saved_tensors_hooks`` measurements (``expkit.memory.replica``). Beside it: the Korthikanti et al.
formula, which assumes a GPT-3 block (4h MLP, GeLU, LayerNorm, dropout masks) and no vocabulary term.
"""

from __future__ import annotations

from dataclasses import dataclass

from expkit.memory.architecture import ModelSpec
from expkit.models.description import LayerSpec

__all__ = [
    "LINEAR_GROUPS",
    "ActivationEstimate",
    "ActivationTerm",
    "estimate_activations",
    "korthikanti_bytes",
]

# The linears of a block grouped by the tensor they read (transformers' Llama/Qwen2 modeling code).
LINEAR_GROUPS: dict[str, tuple[str, ...]] = {
    "attn_in": ("q_proj", "k_proj", "v_proj"),
    "o_in": ("o_proj",),
    "mlp_in": ("gate_proj", "up_proj"),
    "down_in": ("down_proj",),
}
PRECISIONS = ("bf16-mixed", "fp16-mixed", "fp32")


@dataclass(frozen=True)
class ActivationTerm:
    """One saved tensor (or group): ``bytes_per_token`` for one layer (or the fixed part), and why."""

    name: str
    bytes_per_token: float
    formula: str


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
    outputs 2 B. *-mixed, lora/qlora: the base model is held in 16 bit (as LoRA recipes load it),
    adapters fp32 under autocast, residual stream 2 B.
    """
    if precision == "fp32":
        return 4, 4, False
    return (4 if method == "full" else 2), 2, True


def estimate_activations(
    spec: ModelSpec,
    *,
    batch: int,
    seq: int,
    precision: str = "bf16-mixed",
    method: str = "full",
    lora_targets: tuple[str, ...] = ("all-linear",),
    lora_r: int = 16,
    grad_ckpt: bool = False,
    attention: str = "sdpa",
    device: str = "cuda",
) -> ActivationEstimate:
    """Bytes saved for backward by one forward pass of an HF decoder: Llama/Qwen2-style dense blocks,
    mixture-of-experts blocks (Mixtral, Qwen3-MoE, DeepSeek: router, dispatch, experts, combine) and
    DeepSeek's latent attention, summed over the model's layer kinds.

    Args:
        spec: the architecture.
        batch, seq: micro-batch size and sequence length (tokens per micro-batch = batch * seq).
        precision: ``bf16-mixed`` / ``fp16-mixed`` (autocast) or ``fp32``.
        method: ``full``, ``lora`` or ``qlora`` (frozen base: frozen linears and norms save less).
        lora_targets: module names adapted (``all-linear`` = every linear of the block).
        lora_r: LoRA rank (each adapter saves its r-wide intermediate).
        grad_ckpt: HF gradient checkpointing per decoder layer (stores each layer's input only).
        attention: ``sdpa`` (flash / memory-efficient kernels: no T x T matrix stored) or ``eager``.
        device: ``cuda`` or ``cpu``: on the CPU, SDPA with different q and v head dims (MLA) falls back to
            the math kernel, which stores the probabilities.

    Returns:
        ActivationEstimate with the terms and their formulas.

    Example:
        >>> from expkit.memory import load_model_spec
        >>> a = estimate_activations(load_model_spec("llama-2-7b"), batch=1, seq=4096)
        >>> round(a.korthikanti_total_bytes / 2**30, 1)  # the formula without the s^2 term: 17.0
        17.0

    Reference: Korthikanti et al. 2022 eq. (1) for the comparison column.
    """
    h, heads, r = spec.hidden_size, spec.num_heads, lora_r
    resid, a, autocast = _mode(precision, method)
    full = method == "full"
    all_lin = tuple(n for g in LINEAR_GROUPS.values() for n in g)
    targeted = set(all_lin if lora_targets == ("all-linear",) else lora_targets) & set(all_lin)
    desc = spec.desc
    # the installed peft's all-linear wraps transformers 5's fused expert parameters (tested in tests/models)
    experts_targeted = lora_targets == ("all-linear",) or bool({"experts", "gate_up_proj"} & set(lora_targets))
    kinds: list[tuple[str, int, list[ActivationTerm]]] = []
    for layer, count in desc.layer_groups():
        terms = _layer_terms(
            spec,
            layer,
            seq=seq,
            tokens=batch * seq,
            resid=resid,
            a=a,
            autocast=autocast,
            full=full,
            targeted=targeted,
            experts_targeted=experts_targeted,
            r=r,
            attention=attention,
            device=device,
        )
        kinds.append((layer.label, count, terms))
    norm_b = 4 * h + 4 + (resid * h if full else 0)
    norm_f = "x fp32 4h + rsqrt 4" + (f" + normed {resid}h" if full else " (frozen weight: normed not saved)")

    tokens = batch * seq
    per_kind_bytes = [
        (label, count, int(sum(t.bytes_per_token for t in terms) * tokens)) for label, count, terms in kinds
    ]
    layer_bytes = max(b for _, _, b in per_kind_bytes)  # the largest layer (rebuilt under checkpointing)
    terms = max(kinds, key=lambda k: sum(t.bytes_per_token for t in k[2]))[2]
    if grad_ckpt:
        stored, recompute = spec.num_layers * resid * h * tokens, layer_bytes
        layer_terms = (ActivationTerm("checkpointed layer input", resid * h, f"{resid}h per layer"), *terms)
    else:
        stored, recompute = sum(c * b for _, c, b in per_kind_bytes), 0
        layer_terms = tuple(terms)

    att0 = desc.layers[0].attention
    rope_dim = int(att0.qk_rope_head_dim or 0) if att0.kind == "mla" else spec.head_dim
    head_saves = full or "lm_head" in targeted
    fixed = [
        ActivationTerm("input ids", 8, "int64 8"),
        ActivationTerm(
            "rotary cos, sin",
            0 if grad_ckpt else 2 * resid * rope_dim,
            "recomputed inside each checkpoint (0)" if grad_ckpt else f"2 * {resid} * head_dim",
        ),
        ActivationTerm("final RMSNorm", norm_b, norm_f),
        ActivationTerm(
            "lm_head input", (2 if autocast else 4) * h if head_saves else 0, "16-bit cast 2h" if autocast else "4h"
        ),
        ActivationTerm("labels", 8, "int64 8"),
    ]
    if not full and not grad_ckpt:
        fixed.append(
            ActivationTerm(
                "layer 0 input norm",
                -norm_b,
                "frozen embedding output needs no grad: layer 0's first norm saves nothing",
            )
        )
    fixed_bytes = int(sum(t.bytes_per_token for t in fixed) * tokens)
    loss_bytes = 4 * spec.vocab_size * tokens  # fp32 log-probs saved by log_softmax (HF upcasts logits)
    fixed.append(ActivationTerm("log-probs (fp32)", 4 * spec.vocab_size, f"4 * vocab {spec.vocab_size}"))
    k = korthikanti_bytes(
        seq=seq, batch=batch, hidden=h, heads=heads, num_layers=spec.num_layers, with_scores=attention == "eager"
    )
    k_formula = (
        "L s b h (34 + 5 a s / h), 16-bit, GPT-3 block (4h GeLU MLP, LayerNorm, dropout masks), "
        "no vocabulary term" + ("" if attention == "eager" else "; s^2 term dropped (sdpa/flash)")
    )
    return ActivationEstimate(
        batch=batch,
        seq=seq,
        num_layers=spec.num_layers,
        precision=precision,
        grad_ckpt=grad_ckpt,
        layer_kinds=tuple((label, count, b) for label, count, b in per_kind_bytes),
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


_QK_NORM_TYPES = ("qwen3", "qwen3_moe")  # RMSNorm on q and k per head (transformers' Qwen3Attention)


def _layer_terms(
    spec: ModelSpec,
    layer: LayerSpec,
    *,
    seq: int,
    tokens: int,
    resid: int,
    a: int,
    autocast: bool,
    full: bool,
    targeted: set[str],
    experts_targeted: bool,
    r: int,
    attention: str,
    device: str,
) -> list[ActivationTerm]:
    """Saved-for-backward bytes per token of one decoder layer of this kind, term by term."""
    h = spec.hidden_size
    att, mlp = layer.attention, layer.mlp
    heads = att.num_heads

    def savers(group: str) -> int:
        mods = LINEAR_GROUPS[group]
        return len(mods) if full else sum(m in targeted for m in mods)

    def lin_input(n: int, width: int, wname: str) -> tuple[int, str]:
        # autocast: each linear saves its own 16-bit cast of the input; fp32: the one input, shared
        if autocast:
            return n * 2 * width, f"{n} linears * 16-bit cast of input 2{wname}"
        return (4 * width if n else 0), f"input shared by {n} linears, 4{wname}"

    terms: list[ActivationTerm] = []
    norm_b = 4 * h + 4 + (resid * h if full else 0)
    norm_f = "x fp32 4h + rsqrt 4" + (f" + normed {resid}h" if full else " (frozen weight: normed not saved)")
    terms.append(ActivationTerm("2 RMSNorm", 2 * norm_b, f"2 * ({norm_f})"))
    probs_stored = attention == "eager"
    if att.kind == "mla":
        qr, kr, qk, v = att.q_lora_rank or 0, int(att.kv_lora_rank or 0), att.head_dim, att.v_head_dim
        n_in = 2 if qr else 1  # q_a_proj (or q_proj) and kv_a_proj_with_mqa read the normed hidden state
        b, f = lin_input(n_in, h, "h")
        terms.append(ActivationTerm("MLA down-projection inputs", b, f))
        lat = (4 * kr + 4 + a * kr) + (2 if autocast else 4) * kr
        if qr:
            lat += (4 * qr + 4 + a * qr) + (2 if autocast else 4) * qr
        terms.append(
            ActivationTerm(
                "MLA latent norms + up-projection inputs",
                lat,
                f"RMSNorm on q rank {qr} and kv rank {kr} (x 4, rsqrt 4, normed {a}) + the "
                "16-bit/fp32 input of q_b_proj and kv_b_proj",
            )
        )
        # CPU SDPA cannot use its flash kernel when q and v head dims differ: the math path stores probs
        probs_stored = probs_stored or (device == "cpu" and qk != v)
        qkv = a * heads * qk * 2 + a * heads * (att.qk_nope_head_dim or 0) + a * heads * v
        terms.append(
            ActivationTerm(
                "MLA q, k, kv_b output",
                qkv,
                f"q and k {a}*{heads}*{qk} each + kv_b_proj output {a}*{heads}*"
                f"({att.qk_nope_head_dim}+{v}) (v is a view of it)",
            )
        )
        terms.append(
            ActivationTerm(
                "o_proj input",
                (2 if autocast else 4) * heads * v if autocast or not full else a * heads * v,
                f"attention output {heads}*{v}",
            )
        )
        if probs_stored:
            terms.append(
                ActivationTerm(
                    "attention probabilities",
                    4 * heads * seq,
                    f"4*{heads}*T (eager, or SDPA's math fallback on the CPU)",
                )
            )
        else:
            terms.append(ActivationTerm("attention logsumexp", 4 * heads, f"4*{heads}"))
    else:
        hq, kv = heads * att.head_dim, att.num_kv_heads * att.head_dim
        b, f = lin_input(savers("attn_in"), h, "h")
        terms.append(ActivationTerm("attn_in linear inputs", b, f))
        if spec.model_type in _QK_NORM_TYPES:
            qk_norm = (4 * hq + 4 * heads + a * hq) + (4 * kv + 4 * att.num_kv_heads + a * kv)
            terms.append(ActivationTerm("q/k RMSNorm", qk_norm, f"per-head norms on q ({hq}) and k ({kv})"))
        if attention == "sdpa":
            terms.append(
                ActivationTerm(
                    "attention (sdpa)",
                    a * (2 * hq + 2 * kv) + 4 * heads,
                    f"q, out {a}*{hq} each + k, v {a}*{kv} each + logsumexp 4*{heads}",
                )
            )
        else:
            probs = 4 * heads * seq + (a * heads * seq if a != 4 else 0)
            terms.append(
                ActivationTerm(
                    "attention (eager)",
                    a * 4 * hq + probs,
                    f"q, repeated k, v, out {a}*{hq} each + probs (4{'+' + str(a) if a != 4 else ''})*{heads}*T",
                )
            )
        n_o = savers("o_in")
        o_extra = (n_o * 2 * hq) if (autocast and not full) else 0
        terms.append(
            ActivationTerm(
                "o_proj input", o_extra, "a view of the attention output (0)" if not o_extra else f"{n_o} * cast 2*{hq}"
            )
        )
    if mlp.kind == "moe":
        E, k, ie, sh = mlp.num_experts, mlp.top_k, mlp.expert_intermediate_size, mlp.shared_intermediate_size
        n_in = 1 + (2 if sh else 0)  # router, shared gate and up read the normed hidden state
        b, f = lin_input(n_in, h, "h")
        terms.append(ActivationTerm("router + shared-expert inputs", b, f))
        terms.append(
            ActivationTerm(
                "router probs + top-k indices",
                4 * E + 40 * k,
                f"fp32 softmax/sigmoid 4*{E} + int64 routing indices 40*{k}",
            )
        )
        # transformers 5 runs the fused experts through torch._grouped_mm, which CPU autocast does not cast:
        # measured fp32 there; on CUDA the 16-bit path is assumed
        ea = 4 if (autocast and device == "cpu") else a
        lin = ea if not autocast or device == "cpu" else 2
        slot = lin * h + ea * 2 * ie + ea * ie + ea * ie + ea * h
        terms.append(
            ActivationTerm(
                "routed experts (dispatch, gate_up, act, down, combine)",
                k * slot,
                f"{k} slots * (gathered input {lin}h + gate_up {ea}*2*{ie} + act {ea}*{ie} + "
                f"product {ea}*{ie} + down output {ea}h)",
            )
        )
        if sh:
            terms.append(
                ActivationTerm(
                    "shared experts (SwiGLU + down input)",
                    4 * a * sh,
                    f"gate out, act out, up out, product: 4 * {a} * {sh}",
                )
            )
        if not full and experts_targeted:
            # peft wraps the fused 3-D expert parameters (ParamWrapper): each step builds W + B A for every
            # expert and autograd keeps it for backward: a per-layer constant, not per token. Saved-tensor hooks
            # see a second expert-sized tensor per layer, but the allocator's peak of a step does not (measured
            # on the Mixtral-style LoRA validation case: one copy predicts the peak within 0.5%, two +14%).
            wb = 2 if autocast else 4
            merged = wb * E * 3 * h * ie
            terms.append(
                ActivationTerm(
                    "LoRA on fused experts: merged W + B A",
                    merged / tokens,
                    f"{wb} B * {E} experts * 3 * {h} * {ie} per layer, once per step",
                )
            )
    else:
        inter = mlp.intermediate_size
        b, f = lin_input(savers("mlp_in"), h, "h")
        terms.append(ActivationTerm("mlp_in linear inputs", b, f))
        terms.append(ActivationTerm("SwiGLU", 3 * a * inter, f"gate out, silu out, up out: 3 * {a} * {inter}"))
        n_d = savers("down_in")
        down = (n_d * 2 * inter) if (autocast and not full) else (a * inter if n_d else 0)
        terms.append(ActivationTerm("down_proj input", down, f"{'saved' if n_d else 'not saved'} product {a}*{inter}"))
    if not full:
        n_lora = len(targeted)
        ra = 2 if autocast else 4
        terms.append(ActivationTerm("LoRA A outputs", n_lora * ra * r, f"{n_lora} adapters * {ra} * r={r}"))
    return terms
