"""The roofline of one step of a transformer: FLOPs and bytes per part, intensity, bound, best-case speed.

Attainable FLOP/s = min(peak, intensity x bandwidth) (Williams, Waterman, Patterson, "Roofline: an
insightful visual performance model", CACM 52(4), 2009). A step is split into parts that run as separate
kernels (weight matmuls, attention over the KV cache, the optimizer update); each part takes
max(FLOPs / peak, bytes / bandwidth) and the step takes their sum: a best case, no overlap between parts.
Matmul bytes are weights plus 16-bit activations in and out; norms, rotary and softmax are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from expkit.errors import UsageError

__all__ = ["ModelShape", "Phase", "Roof", "RooflineEstimate", "RooflinePart", "estimate_roofline",
           "load_model_shape", "roof_for_gpu"]

Phase = Literal["decode", "prefill", "train"]
PHASES: tuple[str, ...] = ("decode", "prefill", "train")
WEIGHT_BITS: tuple[int, ...] = (16, 8, 4)
KV_BYTES = 2  # KV cache kept in bf16/fp16; weight-only quantization leaves it alone
# AdamW update, per parameter: read fp32 weight, grad, m, v (16 B), write weight, m, v (12 B),
# write the bf16 copy (2 B) = 30 B; ~12 FLOP (moment updates, sqrt, divide, decay).
ADAM_BYTES_PER_PARAM = 30
ADAM_FLOP_PER_PARAM = 12


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a decoder-only transformer config that set its FLOPs and bytes.

    ``linear_params`` counts the weights of every matmul a token goes through (q, k, v, o, gate, up,
    down per layer, and the LM head even when it is tied to the embedding); embeddings and norms are
    lookups and elementwise work, left out of the FLOP count. ``matmul_io_per_token`` is the number of
    activation elements those matmuls read and write per token (sum of in + out features).
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

    @classmethod
    def from_hf_config(cls, config: dict, *, name: str = "model") -> ModelShape:
        """Read a Hugging Face ``config.json`` dict (Llama, Qwen2, Mistral style) through the memory
        ledger's reader (``expkit.memory.spec_from_dict``), so both tools read configs one way.

        Raises:
            InputError: a key the architecture needs is missing or not a positive integer.
        """
        from expkit.memory.architecture import spec_from_dict

        spec = spec_from_dict(config, name=name, source=name)
        h, heads, kv, hd, inter = (spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim,
                                   spec.intermediate_size)
        # (in, out) features of each matmul in one layer: q, k, v, o, and the SwiGLU gate, up, down
        mats = [(h, heads * hd), (h, kv * hd), (h, kv * hd), (heads * hd, h), (h, inter), (h, inter), (inter, h)]
        per_layer = sum(i * o for i, o in mats)
        io = spec.num_layers * sum(i + o for i, o in mats) + h + spec.vocab_size
        return cls(name=name, hidden_size=h, num_layers=spec.num_layers, num_heads=heads, num_kv_heads=kv,
                   head_dim=hd, intermediate_size=inter, vocab_size=spec.vocab_size,
                   tie_word_embeddings=spec.tied_embeddings,
                   linear_params=spec.num_layers * per_layer + spec.vocab_size * h, matmul_io_per_token=io)


def load_model_shape(model: str | Path) -> ModelShape:
    """A ModelShape from a catalog name (``qwen2.5-0.5b``), a model directory or a ``config.json`` path.

    Reading goes through the memory ledger's loader (``expkit.memory.load_model_spec``), so both tools
    accept the same names and report bad files the same way.

    Raises:
        InputError: the file is not JSON or lacks a key (names the file and the key).
        UsageError: neither a path nor a catalog name.
    """
    from expkit.memory import load_model_spec

    spec = load_model_spec(model)
    return ModelShape.from_hf_config(spec.raw, name=spec.name)


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
    return Roof(name=g.name, peak_flop_s=g.peak_flop_s, bandwidth_bytes_s=g.bandwidth_bytes_s,
                source=f"datasheet: {g.source}")


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


def _part(name: str, flops: float, nbytes: float, roof: Roof, note: str = "") -> RooflinePart:
    ai = flops / nbytes if nbytes else float("inf")
    bound = "compute" if ai >= roof.ridge_flop_per_byte else "memory"
    t = max(flops / roof.peak_flop_s, nbytes / roof.bandwidth_bytes_s)
    return RooflinePart(name=name, flops=flops, bytes=nbytes, intensity_flop_per_byte=ai, bound=bound,
                        time_s=t, note=note)


def estimate_roofline(
    *, model: ModelShape, roof: Roof, phase: str = "decode", batch: int = 1, context: int = 1024,
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
    weight_bytes = m.linear_params * wbytes
    act_bytes_per_token = m.matmul_io_per_token * KV_BYTES  # activations in and out of every matmul
    if phase == "decode":
        tokens = batch
        kv_read = batch * 2 * m.num_layers * m.num_kv_heads * m.head_dim * context * KV_BYTES
        attn_flops = batch * 4 * m.num_layers * context * m.num_heads * m.head_dim  # QK^T and AV
        parts = (
            _part("weight matmuls", 2 * m.linear_params * batch, weight_bytes + batch * act_bytes_per_token, roof,
                  f"every weight read once per step, shared by the {batch} sequences"),
            _part("KV-cache attention", attn_flops, kv_read, roof,
                  "each sequence reads its own KV cache: intensity does not grow with batch"),
        )
        # weight-matmul intensity 2B / (wbytes + B a / P) = ridge  =>  B = ridge wbytes / (2 - ridge a / P)
        a_per_p = act_bytes_per_token / m.linear_params
        critical: float | None = (roof.ridge_flop_per_byte * wbytes / (2 - roof.ridge_flop_per_byte * a_per_p)
                                  if 2 > roof.ridge_flop_per_byte * a_per_p else None)
        kv_note = (f"the KV-cache attention stays memory-bound at any batch "
                   f"(intensity {parts[1].intensity_flop_per_byte:.1f} FLOP/byte)")
        if critical is None:
            note = ("the weight matmuls never reach the ridge: the activations they read and write grow with the "
                    f"batch as fast as their FLOPs; {kv_note}")
        else:
            note = (f"batch at which the weight matmuls reach the ridge, activations' traffic included (weights alone: "
                    f"{roof.ridge_flop_per_byte * wbytes / 2:.0f}); {kv_note}")
    else:
        tokens = batch * context
        qkvo = batch * m.num_layers * context * (2 * m.num_heads + 2 * m.num_kv_heads) * m.head_dim * KV_BYTES
        attn_flops = batch * 2 * m.num_layers * context * context * m.num_heads * m.head_dim  # causal half of 4
        mult = 3 if phase == "train" else 1  # backward = 2x forward (Kaplan et al. 2020, 6N per token)
        parts = [
            _part("weight matmuls", mult * 2 * m.linear_params * tokens,
                  mult * (weight_bytes + tokens * act_bytes_per_token), roof,
                  f"{tokens} tokens share each weight read"),
            _part("attention", mult * attn_flops, mult * qkvo, roof, "flash-style: Q, K, V, O read once"),
        ]
        if phase == "train":
            parts.append(_part("optimizer (AdamW)", ADAM_FLOP_PER_PARAM * m.linear_params,
                               ADAM_BYTES_PER_PARAM * m.linear_params, roof, "30 bytes per parameter"))
        parts = tuple(parts)
        critical, note = None, f"no critical batch for {phase}: it is already {batch * context} tokens per weight read"
    flops = sum(p.flops for p in parts)
    nbytes = sum(p.bytes for p in parts)
    step = sum(p.time_s for p in parts)
    ai = flops / nbytes
    return RooflineEstimate(
        device=roof.name, device_source=roof.source, peak_flop_s=roof.peak_flop_s,
        bandwidth_bytes_s=roof.bandwidth_bytes_s, ridge_flop_per_byte=roof.ridge_flop_per_byte,
        model=m.name, phase=phase, batch=batch, context=context, weight_bits=weight_bits, parts=parts,
        flops=flops, bytes=nbytes, intensity_flop_per_byte=ai,
        bound="compute" if ai >= roof.ridge_flop_per_byte else "memory",
        step_time_s=step, tokens_per_step=tokens, tokens_per_s=tokens / step,
        critical_batch=critical, critical_batch_note=note,
    )
