"""Activation memory of Llama/Qwen2-style decoder blocks as Hugging Face implements them, term by term.

Each term is a tensor that autograd saves for backward, in bytes per token, derived by reading
transformers' ``LlamaDecoderLayer``/``Qwen2DecoderLayer`` and peft's ``lora.Linear`` and checked against
``saved_tensors_hooks`` measurements (``expkit.memory.replica``). Beside it: the Korthikanti et al.
formula, which assumes a GPT-3 block (4h MLP, GeLU, LayerNorm, dropout masks) and no vocabulary term.
"""

from __future__ import annotations

from dataclasses import dataclass

from expkit.memory.architecture import ModelSpec

__all__ = [
    "ActivationEstimate",
    "ActivationTerm",
    "LINEAR_GROUPS",
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

    ``layer_bytes`` is one layer at (batch, seq); ``stored_bytes`` all layers as stored between forward and
    backward (with checkpointing: each layer's input only); ``recompute_bytes`` the one layer rebuilt in
    backward under checkpointing (0 otherwise). ``fixed_bytes`` covers embedding ids, rotary tables, the
    final norm and the LM head input; the vocabulary-sized loss tensors are ``loss_bytes``.
    """

    batch: int
    seq: int
    num_layers: int
    precision: str
    grad_ckpt: bool
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


def korthikanti_bytes(*, seq: int, batch: int, hidden: int, heads: int, num_layers: int,
                      with_scores: bool = True) -> int:
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
) -> ActivationEstimate:
    """Bytes saved for backward by one forward pass of a Llama/Qwen2-style HF causal LM.

    Args:
        spec: the architecture.
        batch, seq: micro-batch size and sequence length (tokens per micro-batch = batch * seq).
        precision: ``bf16-mixed`` / ``fp16-mixed`` (autocast) or ``fp32``.
        method: ``full``, ``lora`` or ``qlora`` (frozen base: frozen linears and norms save less).
        lora_targets: module names adapted (``all-linear`` = every linear of the block).
        lora_r: LoRA rank (each adapter saves its r-wide intermediate).
        grad_ckpt: HF gradient checkpointing per decoder layer (stores each layer's input only).
        attention: ``sdpa`` (flash / memory-efficient kernels: no T x T matrix stored) or ``eager``.

    Returns:
        ActivationEstimate with the terms and their formulas.

    Example:
        >>> from expkit.memory import load_model_spec
        >>> a = estimate_activations(load_model_spec("llama-2-7b"), batch=1, seq=4096)
        >>> round(a.korthikanti_total_bytes / 2**30, 1)  # the formula without the s^2 term: 17.0
        17.0

    Reference: Korthikanti et al. 2022 eq. (1) for the comparison column.
    """
    h, hq, kv, inter, heads, r = (spec.hidden_size, spec.num_heads * spec.head_dim, spec.kv_dim,
                                  spec.intermediate_size, spec.num_heads, lora_r)
    resid, a, autocast = _mode(precision, method)
    full = method == "full"
    all_lin = tuple(n for g in LINEAR_GROUPS.values() for n in g)
    targeted = set(all_lin if lora_targets == ("all-linear",) else lora_targets) & set(all_lin)

    def savers(group: str) -> int:
        mods = LINEAR_GROUPS[group]
        return len(mods) if full else sum(m in targeted for m in mods)

    terms: list[ActivationTerm] = []
    norm_b = 4 * h + 4 + (resid * h if full else 0)
    norm_f = (f"x fp32 4h + rsqrt 4" + (f" + normed {resid}h" if full else " (frozen weight: normed not saved)"))
    terms.append(ActivationTerm("2 RMSNorm", 2 * norm_b, f"2 * ({norm_f})"))
    for group, width, wname in (("attn_in", h, "h"), ("mlp_in", h, "h")):
        n = savers(group)
        if autocast:
            b, f = n * 2 * width, f"{n} linears * 16-bit cast of input 2{wname}"
        else:
            b, f = (4 * width if n else 0), f"input shared by {n} linears, 4{wname}"
        terms.append(ActivationTerm(f"{group} linear inputs", b, f))
    if attention == "sdpa":
        terms.append(ActivationTerm("attention (sdpa)", a * (2 * hq + 2 * kv) + 4 * heads,
                                    f"q, out {a}*{hq} each + k, v {a}*{kv} each + logsumexp 4*{heads}"))
    else:
        probs = 4 * heads * seq + (a * heads * seq if a != 4 else 0)
        terms.append(ActivationTerm("attention (eager)", a * 4 * hq + probs,
                                    f"q, repeated k, v, out {a}*{hq} each + probs (4{'+' + str(a) if a != 4 else ''})"
                                    f"*{heads}*T"))
    n_o = savers("o_in")
    o_extra = (n_o * 2 * hq) if (autocast and not full) else 0
    terms.append(ActivationTerm("o_proj input", o_extra,
                                "a view of the attention output (0)" if not o_extra else f"{n_o} * cast 2*{hq}"))
    terms.append(ActivationTerm("SwiGLU", 3 * a * inter, f"gate out, silu out, up out: 3 * {a} * {inter}"))
    n_d = savers("down_in")
    down = (n_d * 2 * inter) if (autocast and not full) else (a * inter if n_d else 0)
    terms.append(ActivationTerm("down_proj input", down, f"{'saved' if n_d else 'not saved'} product {a}*{inter}"))
    if not full:
        n_lora = len(targeted)
        ra = 2 if autocast else 4
        terms.append(ActivationTerm("LoRA A outputs", n_lora * ra * r, f"{n_lora} adapters * {ra} * r={r}"))
    per_layer_token = sum(t.bytes_per_token for t in terms)

    tokens = batch * seq
    layer_bytes = int(per_layer_token * tokens)
    if grad_ckpt:
        stored, recompute = spec.num_layers * resid * h * tokens, layer_bytes
        layer_terms = (ActivationTerm("checkpointed layer input", resid * h, f"{resid}h per layer"),) + tuple(terms)
    else:
        stored, recompute = spec.num_layers * layer_bytes, 0
        layer_terms = tuple(terms)

    head_saves = full or "lm_head" in targeted
    fixed = [
        ActivationTerm("input ids", 8, "int64 8"),
        ActivationTerm("rotary cos, sin", 0 if grad_ckpt else 2 * resid * spec.head_dim,
                       "recomputed inside each checkpoint (0)" if grad_ckpt else f"2 * {resid} * head_dim"),
        ActivationTerm("final RMSNorm", norm_b, norm_f),
        ActivationTerm("lm_head input", (2 if autocast else 4) * h if head_saves else 0,
                       "16-bit cast 2h" if autocast else "4h"),
        ActivationTerm("labels", 8, "int64 8"),
    ]
    if not full and not grad_ckpt:
        fixed.append(ActivationTerm("layer 0 input norm", -norm_b,
                                    "frozen embedding output needs no grad: layer 0's first norm saves nothing"))
    fixed_bytes = int(sum(t.bytes_per_token for t in fixed) * tokens)
    loss_bytes = 4 * spec.vocab_size * tokens  # fp32 log-probs saved by log_softmax (HF upcasts logits)
    fixed.append(ActivationTerm("log-probs (fp32)", 4 * spec.vocab_size, f"4 * vocab {spec.vocab_size}"))
    k = korthikanti_bytes(seq=seq, batch=batch, hidden=h, heads=heads, num_layers=spec.num_layers,
                          with_scores=attention == "eager")
    k_formula = ("L s b h (34 + 5 a s / h), 16-bit, GPT-3 block (4h GeLU MLP, LayerNorm, dropout masks), "
                 "no vocabulary term" + ("" if attention == "eager" else "; s^2 term dropped (sdpa/flash)"))
    return ActivationEstimate(
        batch=batch, seq=seq, num_layers=spec.num_layers, precision=precision, grad_ckpt=grad_ckpt,
        layer_terms=layer_terms, fixed_terms=tuple(fixed), layer_bytes=layer_bytes, stored_bytes=stored,
        recompute_bytes=recompute, fixed_bytes=fixed_bytes, loss_bytes=loss_bytes,
        korthikanti_total_bytes=k, korthikanti_formula=k_formula,
    )
