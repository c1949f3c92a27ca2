"""The roofline of one step of a transformer: FLOPs and bytes per part, intensity, bound, best-case speed.

Attainable FLOP/s = min(peak, intensity x bandwidth) (Williams, Waterman, Patterson, "Roofline: an
insightful visual performance model", CACM 52(4), 2009). A step is split into parts that run as separate
kernels (weight matmuls, attention over the KV cache, the optimizer update); each part takes
max(FLOPs / peak, bytes / bandwidth) and the step takes their sum: a best case, no overlap between parts.
Matmul bytes are weights plus 16-bit activations in and out; norms, rotary and softmax are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from expkit.errors import UsageError

__all__ = [
    "AttentionGroup",
    "ModelShape",
    "Phase",
    "Roof",
    "RooflineEstimate",
    "RooflinePart",
    "estimate_roofline",
    "load_model_shape",
    "roof_for_gpu",
]

Phase = Literal["decode", "prefill", "train"]
PHASES: tuple[str, ...] = ("decode", "prefill", "train")
WEIGHT_BITS: tuple[int, ...] = (16, 8, 4)
KV_BYTES = 2  # KV cache kept in bf16/fp16; weight-only quantization leaves it alone
# AdamW update, per parameter: read fp32 weight, grad, m, v (16 B), write weight, m, v (12 B),
# write the bf16 copy (2 B) = 30 B; ~12 FLOP (moment updates, sqrt, divide, decay).
ADAM_BYTES_PER_PARAM = 30
ADAM_FLOP_PER_PARAM = 12


@dataclass(frozen=True)
class AttentionGroup:
    """Layers that share an attention form: cached elements per token-layer, FLOPs, and a sliding window.

    ``decode_flop_per_cached_token``: one new token against one cached token in one layer (QK^T and AV:
    4 * heads * head_dim; MLA in the absorbed form, attention over the latent: 2 heads (rank + rope) +
    2 heads rank). ``pair_flop``: one (query, key) pair in prefill/training (2 heads (qk_dim + v_dim); MLA
    expanded per head as transformers runs it).
    """

    kind: str
    layers: int
    kv_elements_per_token: int
    decode_flop_per_cached_token: int
    pair_flop: int
    qkvo_elements_per_token: int
    window: int | None


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a decoder-only transformer config that set its FLOPs and bytes.

    ``linear_params`` counts the weights of every matmul (q, k, v, o or MLA's projections, the dense MLP, the
    router, shared and *all* routed experts, and the LM head even when it is tied to the embedding);
    ``active_linear_params`` those one token multiplies by (top-k of E routed experts). Embeddings and norms
    are lookups and elementwise work, left out of the FLOP count. ``matmul_io_per_token`` is the number of
    activation elements those matmuls read and write per token (sum of in + out features, active path).
    A MoE layer holds ``num_experts`` experts of ``expert_params`` weights each (``moe_layers`` of them).
    """

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    linear_params: int
    matmul_io_per_token: int
    active_linear_params: int = 0
    moe_layers: int = 0
    num_experts: int = 0
    top_k: int = 0
    expert_params: int = 0
    attention: tuple[AttentionGroup, ...] = ()
    stored_weight_bits: float = 16  # the checkpoint's own (quantization_config), scales included
    approximations: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.active_linear_params:
            object.__setattr__(self, "active_linear_params", self.linear_params)
        if not self.attention:
            hd, h, kv = self.head_dim, self.num_heads, self.num_kv_heads
            object.__setattr__(
                self,
                "attention",
                (
                    AttentionGroup(
                        "gqa", self.num_layers, 2 * kv * hd, 4 * h * hd, 4 * h * hd, (2 * h + 2 * kv) * hd, None
                    ),
                ),
            )

    def expected_experts(self, tokens: float) -> float:
        """Distinct experts one MoE layer reads for ``tokens`` routed tokens, under uniform independent routing:
        E (1 - (1 - k/E)^tokens). 1 token: k experts; many tokens: all E."""
        if not self.moe_layers:
            return 0.0
        return self.num_experts * (1 - (1 - self.top_k / self.num_experts) ** tokens)

    def weight_params_read(self, tokens: float) -> float:
        """Matmul weights read once by a step that routes ``tokens`` tokens (dense weights + the experts hit)."""
        dense = self.linear_params - self.moe_layers * self.num_experts * self.expert_params
        return dense + self.moe_layers * self.expected_experts(tokens) * self.expert_params

    @classmethod
    def from_hf_config(cls, config: dict, *, name: str = "model") -> ModelShape:
        """Read a Hugging Face ``config.json`` dict through ``expkit.models`` (the reader the memory ledger
        uses too): dense, MoE (routed + shared experts, router) and MLA layers, sliding windows.

        Raises:
            InputError: a key the architecture needs is missing or not a positive integer.
        """
        from expkit.models import describe_config

        return cls.from_description(describe_config(config, name=name, source=name))

    @classmethod
    def from_description(cls, desc: Any) -> ModelShape:
        """A ModelShape from an ``expkit.models.ModelDescription``."""
        h = desc.hidden_size
        linear = active = io = 0
        moe_specs = set()
        groups: dict[tuple[Any, ...], int] = {}
        for layer in desc.layers:
            a, m = layer.attention, layer.mlp
            if a.kind == "mla":
                qk, v = a.head_dim, a.v_head_dim
                q = (
                    [(h, a.q_lora_rank), (a.q_lora_rank, a.num_heads * qk)]
                    if a.q_lora_rank
                    else [(h, a.num_heads * qk)]
                )
                mats = [
                    *q,
                    (h, a.kv_lora_rank + a.qk_rope_head_dim),
                    (a.kv_lora_rank, a.num_heads * (a.qk_nope_head_dim + v)),
                    (a.num_heads * v, h),
                ]
                key = (
                    "mla",
                    a.kv_cache_elements_per_token,
                    2 * a.num_heads * (a.kv_lora_rank + a.qk_rope_head_dim) + 2 * a.num_heads * a.kv_lora_rank,
                    2 * a.num_heads * (qk + v),
                    a.num_heads * (2 * qk + 2 * v),
                    a.window,
                )
            else:
                hq, hkv = a.num_heads * a.head_dim, a.num_kv_heads * a.head_dim
                mats = [(h, hq), (h, hkv), (h, hkv), (hq, h)]
                key = (
                    a.kind,
                    a.kv_cache_elements_per_token,
                    4 * a.num_heads * a.head_dim,
                    4 * a.num_heads * a.head_dim,
                    2 * hq + 2 * hkv,
                    a.window,
                )
            groups[key] = groups.get(key, 0) + 1
            att_params = sum(i * o for i, o in mats)
            att_io = sum(i + o for i, o in mats)
            if m.kind == "moe":
                e = 3 * h * m.expert_intermediate_size
                shared = 3 * h * m.shared_intermediate_size
                moe_specs.add((m.num_experts, m.top_k, e))
                linear += att_params + h * m.num_experts + shared + m.num_experts * e
                active += att_params + h * m.num_experts + shared + m.top_k * e
                io += (
                    att_io
                    + (h + m.num_experts)
                    + m.top_k * (3 * h + 3 * m.expert_intermediate_size)
                    + (3 * h + 3 * m.shared_intermediate_size if shared else 0)
                )
            else:
                linear += att_params + 3 * h * m.intermediate_size
                active += att_params + 3 * h * m.intermediate_size
                io += att_io + 3 * h + 3 * m.intermediate_size
        head = desc.vocab_size * h
        notes = list(desc.approximations)
        if len(moe_specs) > 1:
            notes.append("MoE layers of different shapes: the roofline uses the first one's E, k and width for all")
        E, k, e = next(iter(moe_specs)) if moe_specs else (0, 0, 0)
        a0 = desc.layers[0].attention
        return cls(
            name=desc.name,
            hidden_size=h,
            num_layers=desc.num_layers,
            num_heads=a0.num_heads,
            num_kv_heads=a0.num_kv_heads,
            head_dim=a0.head_dim,
            intermediate_size=desc.layers[0].mlp.intermediate_size,
            vocab_size=desc.vocab_size,
            tie_word_embeddings=desc.tied_embeddings,
            linear_params=linear + head,
            matmul_io_per_token=io + h + desc.vocab_size,
            active_linear_params=active + head,
            moe_layers=sum(1 for layer in desc.layers if layer.mlp.kind == "moe"),
            num_experts=E,
            top_k=k,
            expert_params=e,
            attention=tuple(
                AttentionGroup(kind, n, kv, dec, pair, qkvo, w) for (kind, kv, dec, pair, qkvo, w), n in groups.items()
            ),
            stored_weight_bits=desc.weight_bits,
            approximations=tuple(notes),
        )


def load_model_shape(model: str | Path) -> ModelShape:
    """A ModelShape from a catalog name (``qwen2.5-0.5b``), a model directory, a ``config.json`` path or a
    Hub ID whose config is in the local Hugging Face cache.

    Reading goes through ``expkit.models`` (as the memory ledger's does), so both tools accept the same
    names and report bad files the same way.

    Raises:
        InputError: the file is not JSON or lacks a key (names the file and the key).
        UsageError: neither a path, a cached Hub ID nor a catalog name.
    """
    from expkit.models import load_model_description

    return ModelShape.from_description(load_model_description(model))


@dataclass(frozen=True)
class Roof:
    """A machine's two roofs: peak FLOP/s and memory bandwidth (bytes/s), and where they come from."""

    name: str
    peak_flop_s: float
    bandwidth_bytes_s: float
    source: str

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.peak_flop_s / self.bandwidth_bytes_s

    def attainable_flop_s(self, intensity_flop_per_byte: float) -> float:
        """min(peak, intensity x bandwidth)."""
        return min(self.peak_flop_s, intensity_flop_per_byte * self.bandwidth_bytes_s)


def roof_for_gpu(name: str) -> Roof:
    """The datasheet roof of a registry GPU (bf16 dense tensor peak). Raises UsageError when unknown."""
    from expkit.perf.hardware import get_gpu

    g = get_gpu(name)
    return Roof(
        name=g.name, peak_flop_s=g.peak_flop_s, bandwidth_bytes_s=g.bandwidth_bytes_s, source=f"datasheet: {g.source}"
    )


@dataclass(frozen=True)
class RooflinePart:
    """One kernel family of a step: its FLOPs, bytes moved, intensity, bound and best-case time."""

    name: str
    flops: float
    bytes: float
    intensity_flop_per_byte: float
    bound: Literal["memory", "compute"]
    time_s: float
    note: str = ""


@dataclass(frozen=True)
class RooflineEstimate:
    """Where one step of ``phase`` sits on ``device``'s roofline, and the best-case speed it allows."""

    device: str
    device_source: str
    peak_flop_s: float
    bandwidth_bytes_s: float
    ridge_flop_per_byte: float
    model: str
    phase: str
    batch: int
    context: int
    weight_bits: int
    parts: tuple[RooflinePart, ...]
    flops: float
    bytes: float
    intensity_flop_per_byte: float
    bound: Literal["memory", "compute"]
    step_time_s: float
    tokens_per_step: int
    tokens_per_s: float
    critical_batch: float | None
    critical_batch_note: str
    weight_bytes: float = 0.0
    active_params: int = 0
    assumptions: tuple[str, ...] = ()
    approximations: tuple[str, ...] = ()


def _part(name: str, flops: float, nbytes: float, roof: Roof, note: str = "") -> RooflinePart:
    ai = flops / nbytes if nbytes else float("inf")
    bound: Literal["memory", "compute"] = "compute" if ai >= roof.ridge_flop_per_byte else "memory"
    t = max(flops / roof.peak_flop_s, nbytes / roof.bandwidth_bytes_s)
    return RooflinePart(
        name=name, flops=flops, bytes=nbytes, intensity_flop_per_byte=ai, bound=bound, time_s=t, note=note
    )


def estimate_roofline(
    *,
    model: ModelShape,
    roof: Roof,
    phase: str = "decode",
    batch: int = 1,
    context: int = 1024,
    weight_bits: int = 16,
) -> RooflineEstimate:
    """FLOPs, bytes, intensity and bound of one step of ``phase`` for ``model`` on ``roof``.

    decode: one new token for each of ``batch`` sequences holding ``context`` tokens of KV cache.
    Weight matmuls do 2 FLOP per weight per sequence and read each weight once per step, so their
    intensity is 2*batch/bytes_per_weight (bf16: = batch); attention over the KV cache does
    4*layers*context*heads*head_dim FLOP per sequence and reads 2*layers*kv_heads*head_dim*context*2
    bytes per sequence, intensity heads/kv_heads at any batch. prefill: ``batch`` x ``context`` tokens
    at once (causal attention, flash-style: Q, K, V, O read once). train: forward + backward = 3x the
    prefill matmul FLOPs and weight reads, plus an AdamW update (30 B and ~12 FLOP per parameter).

    Args:
        model: the transformer's shape (``load_model_shape``).
        roof: peak and bandwidth (``roof_for_gpu`` or measured roofs).
        phase: ``decode``, ``prefill`` or ``train``.
        batch: sequences per step, >= 1.
        context: tokens of context (decode: KV-cache length; prefill/train: sequence length), >= 1.
        weight_bits: 16, 8 or 4 (weight-only quantization; the KV cache stays 16-bit).

    Returns:
        A RooflineEstimate; ``critical_batch`` is the decode batch at which the weight matmuls reach the
        ridge (about ridge x bytes_per_weight / 2; activations' traffic adds a little), None for prefill
        and train.

    Raises:
        UsageError: a bad phase, batch, context or weight_bits.

    Example:
        >>> from expkit.perf.roofline import ModelShape, estimate_roofline, roof_for_gpu
        >>> m = ModelShape.from_hf_config({"hidden_size": 896, "num_hidden_layers": 24,
        ...     "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
        ...     "vocab_size": 151936}, name="Qwen2.5-0.5B")
        >>> e = estimate_roofline(model=m, roof=roof_for_gpu("H100"), phase="decode", batch=1)
        >>> round(e.parts[0].intensity_flop_per_byte, 2), e.bound, round(e.critical_batch)
        (1.0, 'memory', 509)

        The weights alone would reach the ridge at batch 295 (= ridge x 2 bytes / 2 FLOP); the
        activations in and out of each matmul (the 151936-wide logits above all) push it to 509.
    """
    if phase not in PHASES:
        raise UsageError(f"--phase {phase!r} is not one of {', '.join(PHASES)}")
    if weight_bits not in WEIGHT_BITS:
        raise UsageError(f"--weight-bits {weight_bits} is not one of {', '.join(map(str, WEIGHT_BITS))}")
    if batch < 1:
        raise UsageError(f"--batch {batch} must be >= 1")
    if context < 1:
        raise UsageError(f"--context {context} must be >= 1")
    wbytes = weight_bits / 8
    m = model
    act_bytes_per_token = m.matmul_io_per_token * KV_BYTES  # activations in and out of every matmul
    assumptions: list[str] = []
    if m.moe_layers:
        assumptions.append(
            f"MoE: uniform, independent routing: a step that routes n tokens reads E(1 - (1 - k/E)^n) of the "
            f"E = {m.num_experts} experts per MoE layer (k = {m.top_k}); real routers are skewed, so a batch reads "
            "somewhat fewer distinct experts"
        )
    if any(g.kind == "mla" for g in m.attention):
        assumptions.append(
            "MLA: the cache holds the latent + rotary key (kv_lora_rank + qk_rope_head_dim per "
            "token-layer); decode attends in the absorbed form (over the latent, as DeepSeek and "
            "vLLM serve it); prefill/train expand K, V per head as transformers does"
        )
    if any(g.window for g in m.attention):
        assumptions.append("sliding-window layers cache and read at most their window of tokens")

    def matmul_part(tokens: float, mult: int, note: str) -> RooflinePart:
        read = m.weight_params_read(tokens) * wbytes
        return _part(
            "weight matmuls",
            mult * 2 * m.active_linear_params * tokens,
            mult * (read + tokens * act_bytes_per_token),
            roof,
            note,
        )

    if phase == "decode":
        tokens = batch
        kv_read = (
            batch * sum(g.layers * g.kv_elements_per_token * _cached(context, g.window) for g in m.attention) * KV_BYTES
        )
        attn_flops: float = batch * sum(  # float: prefill's causal pair count is fractional
            g.layers * g.decode_flop_per_cached_token * _cached(context, g.window) for g in m.attention
        )
        experts = (
            f"; {m.expected_experts(batch):.1f} of {m.num_experts} experts read per MoE layer" if m.moe_layers else ""
        )
        parts: tuple[RooflinePart, ...] = (
            matmul_part(batch, 1, f"every weight read once per step, shared by the {batch} sequences{experts}"),
            _part(
                "KV-cache attention",
                attn_flops,
                kv_read,
                roof,
                "each sequence reads its own KV cache: intensity does not grow with batch",
            ),
        )
        critical = _critical_batch(m, roof, wbytes, act_bytes_per_token)
        kv_note = (
            f"the KV-cache attention stays memory-bound at any batch "
            f"(intensity {parts[1].intensity_flop_per_byte:.1f} FLOP/byte)"
        )
        if critical is None:
            note = (
                "the weight matmuls never reach the ridge: the activations they read and write grow with the "
                f"batch as fast as their FLOPs; {kv_note}"
            )
        elif m.moe_layers:
            note = (
                f"batch at which the weight matmuls reach the ridge, with the experts a batch reads under uniform "
                f"routing and activations' traffic included (a dense model of the same active size: "
                f"{roof.ridge_flop_per_byte * wbytes / 2:.0f}); {kv_note}"
            )
        else:
            note = (
                f"batch at which the weight matmuls reach the ridge, activations' traffic included (weights alone: "
                f"{roof.ridge_flop_per_byte * wbytes / 2:.0f}); {kv_note}"
            )
    else:
        tokens = batch * context
        pairs = {g.window: _causal_pairs(context, g.window) for g in m.attention}
        qkvo = batch * context * sum(g.layers * g.qkvo_elements_per_token for g in m.attention) * KV_BYTES
        attn_flops = batch * sum(g.layers * g.pair_flop * pairs[g.window] for g in m.attention)
        mult = 3 if phase == "train" else 1  # backward = 2x forward (Kaplan et al. 2020, 6N per token)
        plist = [
            matmul_part(tokens, mult, f"{tokens} tokens share each weight read"),
            _part("attention", mult * attn_flops, mult * qkvo, roof, "flash-style: Q, K, V, O read once"),
        ]
        if phase == "train":
            plist.append(
                _part(
                    "optimizer (AdamW)",
                    ADAM_FLOP_PER_PARAM * m.linear_params,
                    ADAM_BYTES_PER_PARAM * m.linear_params,
                    roof,
                    "30 bytes per parameter",
                )
            )
        parts = tuple(plist)
        critical, note = None, f"no critical batch for {phase}: it is already {batch * context} tokens per weight read"
    flops = sum(p.flops for p in parts)
    nbytes = sum(p.bytes for p in parts)
    step = sum(p.time_s for p in parts)
    ai = flops / nbytes
    return RooflineEstimate(
        device=roof.name,
        device_source=roof.source,
        peak_flop_s=roof.peak_flop_s,
        bandwidth_bytes_s=roof.bandwidth_bytes_s,
        ridge_flop_per_byte=roof.ridge_flop_per_byte,
        model=m.name,
        phase=phase,
        batch=batch,
        context=context,
        weight_bits=weight_bits,
        parts=parts,
        flops=flops,
        bytes=nbytes,
        intensity_flop_per_byte=ai,
        bound="compute" if ai >= roof.ridge_flop_per_byte else "memory",
        step_time_s=step,
        tokens_per_step=tokens,
        tokens_per_s=tokens / step,
        critical_batch=critical,
        critical_batch_note=note,
        weight_bytes=m.weight_params_read(tokens) * wbytes,
        active_params=m.active_linear_params,
        assumptions=tuple(assumptions),
        approximations=m.approximations,
    )


def _cached(context: int, window: int | None) -> int:
    return context if window is None else min(context, window)


def _causal_pairs(context: int, window: int | None) -> float:
    """(query, key) pairs of causal attention over ``context`` tokens: T^2/2, or with a window W < T,
    W^2/2 + (T - W) W (each query sees at most W keys)."""
    if window is None or window >= context:
        return context * context / 2
    return window * window / 2 + (context - window) * window


def _critical_batch(m: ModelShape, roof: Roof, wbytes: float, act_bytes_per_token: float) -> float | None:
    """Decode batch at which the weight matmuls' intensity reaches the ridge (bisection; None: never).

    Intensity(B) = 2 B active / (weight_params_read(B) wbytes + B act): for a dense model
    B = ridge wbytes / (2 - ridge act / P); for a MoE the weights read grow with B until all experts are hit.
    """
    ridge = roof.ridge_flop_per_byte

    def intensity(b: float) -> float:
        return 2 * b * m.active_linear_params / (m.weight_params_read(b) * wbytes + b * act_bytes_per_token)

    lo, hi = 1e-6, 1e9
    if intensity(hi) < ridge:
        return None
    if intensity(lo) >= ridge:
        return lo
    for _ in range(200):
        mid = (lo * hi) ** 0.5 if hi / lo > 4 else (lo + hi) / 2
        if intensity(mid) >= ridge:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-6 * hi:
            break
    return hi
