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
from expkit.models.description import ModelDescription, load_model_description
from expkit.models.sanity import check_non_negative

__all__ = [
    "Phase",
    "Roof",
    "RooflineEstimate",
    "RooflinePart",
    "RooflineQuery",
    "RooflineResult",
    "default_weight_bits",
    "estimate_roofline",
    "estimate_roofline_for",
    "roof_for_device",
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

    def __post_init__(self) -> None:
        check_non_negative(f"roofline part {self.name!r}", [("flops", self.flops), ("bytes", self.bytes)])


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
    linear_params: int = 0
    assumptions: tuple[str, ...] = ()
    approximations: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        figures = ("flops", "bytes", "step_time_s", "tokens_per_s", "weight_bytes", "active_params", "linear_params")
        check_non_negative(f"{self.model} {self.phase} roofline", [(f, getattr(self, f)) for f in figures])


def _part(name: str, flops: float, nbytes: float, roof: Roof, note: str = "") -> RooflinePart:
    ai = flops / nbytes if nbytes else float("inf")
    bound: Literal["memory", "compute"] = "compute" if ai >= roof.ridge_flop_per_byte else "memory"
    t = max(flops / roof.peak_flop_s, nbytes / roof.bandwidth_bytes_s)
    return RooflinePart(
        name=name, flops=flops, bytes=nbytes, intensity_flop_per_byte=ai, bound=bound, time_s=t, note=note
    )


def default_weight_bits(model: ModelDescription) -> int:
    """The registered width nearest the checkpoint's stored bits (fp8 -> 8, GPTQ 4-bit -> 4, none -> 16):
    the figure a roofline reports when no what-if width is asked for."""
    return min(WEIGHT_BITS, key=lambda b: abs(b - model.weight_bits))


def estimate_roofline(
    *,
    model: ModelDescription,
    roof: Roof,
    phase: str = "decode",
    batch: int = 1,
    context: int = 1024,
    weight_bits: int | None = None,
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
        model: the model description (``expkit.models.load_model_description``); its layers give the
            weights, the activations' traffic and each attention kind's cache and FLOPs.
        roof: peak and bandwidth (``roof_for_gpu`` or measured roofs).
        phase: ``decode``, ``prefill`` or ``train``.
        batch: sequences per step, >= 1.
        context: tokens of context (decode: KV-cache length; prefill/train: sequence length), >= 1.
        weight_bits: None (default): the weights as the checkpoint stores them, the same bytes as the memory
            ledger (quantized parts at their bits, output head and the rest 16-bit); 16, 8 or 4: every
            matmul weight at that width (a what-if; the KV cache stays 16-bit).

    Returns:
        A RooflineEstimate; ``critical_batch`` is the decode batch at which the weight matmuls reach the
        ridge (about ridge x bytes_per_weight / 2; activations' traffic adds a little), None for prefill
        and train.

    Raises:
        UsageError: a bad phase, batch, context or weight_bits (names the field).

    Example:
        >>> from expkit.models import describe_config
        >>> from expkit.perf.roofline import estimate_roofline, roof_for_gpu
        >>> m = describe_config({"hidden_size": 896, "num_hidden_layers": 24,
        ...     "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
        ...     "vocab_size": 151936}, name="Qwen2.5-0.5B", source="example")
        >>> e = estimate_roofline(model=m, roof=roof_for_gpu("H100"), phase="decode", batch=1)
        >>> round(e.parts[0].intensity_flop_per_byte, 2), e.bound, round(e.critical_batch)
        (1.0, 'memory', 509)

        The weights alone would reach the ridge at batch 295 (= ridge x 2 bytes / 2 FLOP); the
        activations in and out of each matmul (the 151936-wide logits above all) push it to 509.
    """
    if phase not in PHASES:
        raise UsageError(f"phase {phase!r} is not one of {', '.join(PHASES)}")
    if weight_bits is not None and weight_bits not in WEIGHT_BITS:
        raise UsageError(f"weight_bits {weight_bits} is not one of {', '.join(map(str, WEIGHT_BITS))}")
    if batch < 1:
        raise UsageError(f"batch {batch} must be >= 1")
    if context < 1:
        raise UsageError(f"context {context} must be >= 1")
    m = model
    step = _Step(m, roof, weight_bits, m.matmul_io_per_token() * KV_BYTES)
    if phase == "decode":
        tokens = batch
        parts = _decode_parts(step, batch, context)
        critical, note = _critical_and_note(step, parts[1])
    else:
        tokens = batch * context
        parts = _sequence_parts(step, phase, batch, context)
        critical, note = None, f"no critical batch for {phase}: it is already {batch * context} tokens per weight read"
    flops = sum(p.flops for p in parts)
    nbytes = sum(p.bytes for p in parts)
    step_s = sum(p.time_s for p in parts)
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
        weight_bits=weight_bits if weight_bits is not None else default_weight_bits(m),
        parts=parts,
        flops=flops,
        bytes=nbytes,
        intensity_flop_per_byte=ai,
        bound="compute" if ai >= roof.ridge_flop_per_byte else "memory",
        step_time_s=step_s,
        tokens_per_step=tokens,
        tokens_per_s=tokens / step_s,
        critical_batch=critical,
        critical_batch_note=note,
        weight_bytes=m.weight_bytes_read(tokens, weight_bits)
        + (m.encoder_weight_params() * (weight_bits or m.weight_bits) / 8 if phase != "decode" else 0),
        active_params=m.active_linear_params(),
        linear_params=m.linear_params(),
        assumptions=m.assumptions(),
        approximations=m.approximations,
    )


@dataclass(frozen=True)
class _Step:
    """What every part of a step needs: the model, the roof, the weight width (None: as stored) and the
    activation bytes the matmuls move per token."""

    model: ModelDescription
    roof: Roof
    weight_bits: int | None
    act_bytes_per_token: float

    def matmul_part(self, tokens: float, mult: int, note: str) -> RooflinePart:
        m = self.model
        read = m.weight_bytes_read(tokens, self.weight_bits)
        return _part(
            "weight matmuls",
            mult * 2 * m.active_linear_params() * tokens,
            mult * (read + tokens * self.act_bytes_per_token),
            self.roof,
            note,
        )


def _decode_parts(step: _Step, batch: int, context: int) -> tuple[RooflinePart, ...]:
    groups = step.model.attention_groups()
    kv_read = batch * sum(n * a.cache_read_bytes(context, KV_BYTES) for a, n in groups)
    attn_flops = batch * sum(n * a.decode_flop_per_cached_token * a.cached_tokens(context) for a, n in groups)
    h = step.model.hidden_size
    # the experts each MoE kind reads for ``batch`` tokens: its expert weights read / one expert's weights
    read = dict.fromkeys(
        f"{mlp.weight_params_read(h, batch).experts / mlp.expert_params(h):.1f} of {mlp.num_experts}"
        for mlp in step.model.routed_mlps()
    )
    experts = f"; {' / '.join(read)} experts read per MoE layer" if read else ""
    return (
        step.matmul_part(batch, 1, f"every weight read once per step, shared by the {batch} sequences{experts}"),
        _part(
            "KV-cache attention",
            attn_flops,
            kv_read,
            step.roof,
            "each sequence reads its own KV cache: intensity does not grow with batch",
        ),
    )


def _sequence_parts(step: _Step, phase: str, batch: int, context: int) -> tuple[RooflinePart, ...]:
    """Prefill or training: ``batch`` x ``context`` tokens at once."""
    m, tokens = step.model, batch * context
    groups = (*m.attention_groups(), *m.encoder_attention_groups())
    qkvo = batch * sum(n * a.qkvo_elements(context) for a, n in groups) * KV_BYTES
    attn_flops = batch * sum(n * a.pair_flop * a.causal_pairs(context) for a, n in groups)
    mult = 3 if phase == "train" else 1  # backward = 2x forward (Kaplan et al. 2020, 6N per token)
    parts = [step.matmul_part(tokens, mult, f"{tokens} tokens share each weight read")]
    if m.is_encoder_decoder:
        parts.append(_encoder_part(step, batch * m.source_tokens(context), mult))
    parts.append(
        _part(
            "attention",
            mult * attn_flops,
            mult * qkvo,
            step.roof,
            "flash-style: Q, K, V, O read once"
            + ("; encoder, decoder and cross-attention" if m.is_encoder_decoder else ""),
        )
    )
    if phase == "train":
        parts.append(
            _part(
                "optimizer (AdamW)",
                ADAM_FLOP_PER_PARAM * m.linear_params(),
                ADAM_BYTES_PER_PARAM * m.linear_params(),
                step.roof,
                "30 bytes per parameter",
            )
        )
    return tuple(parts)


def _encoder_part(step: _Step, source_tokens: int, mult: int) -> RooflinePart:
    """The encoder's matmuls over ``source_tokens`` tokens (its layers, convolutions and every decoder layer's
    cross-attention k and v), each weight read once (a convolution over two frames per position does twice the
    FLOPs of its weights): an encoder-decoder's prefill and training only."""
    m = step.model
    wbytes = m.encoder_weight_params() * (step.weight_bits or m.weight_bits) / 8
    return _part(
        "encoder matmuls",
        mult * 2 * m.encoder_params_read() * source_tokens,
        mult * (wbytes + source_tokens * m.encoder_matmul_io_per_token() * KV_BYTES),
        step.roof,
        f"{source_tokens} encoder tokens share each weight read (the encoder runs once per input)",
    )


def _critical_and_note(step: _Step, kv: RooflinePart) -> tuple[float | None, str]:
    m, roof = step.model, step.roof
    wbytes = (step.weight_bits or m.weight_bits) / 8
    critical = _critical_batch(step)
    kv_note = (
        f"the KV-cache attention stays memory-bound at any batch (intensity {kv.intensity_flop_per_byte:.1f} FLOP/byte)"
    )
    if critical is None:
        return None, (
            "the weight matmuls never reach the ridge: the activations they read and write grow with the "
            f"batch as fast as their FLOPs; {kv_note}"
        )
    if m.is_moe:
        return critical, (
            f"batch at which the weight matmuls reach the ridge, with the experts a batch reads under uniform "
            f"routing and activations' traffic included (a dense model of the same active size: "
            f"{roof.ridge_flop_per_byte * wbytes / 2:.0f}); {kv_note}"
        )
    return critical, (
        f"batch at which the weight matmuls reach the ridge, activations' traffic included (weights alone: "
        f"{roof.ridge_flop_per_byte * wbytes / 2:.0f}); {kv_note}"
    )


def _critical_batch(step: _Step) -> float | None:
    """Decode batch at which the weight matmuls' intensity reaches the ridge (bisection; None: never).

    Intensity(B) = 2 B active / (weight_params_read(B) wbytes + B act): for a dense model
    B = ridge wbytes / (2 - ridge act / P); for a MoE the weights read grow with B until all experts are hit.
    """
    m, ridge = step.model, step.roof.ridge_flop_per_byte
    active = m.active_linear_params()

    def intensity(b: float) -> float:
        return 2 * b * active / (m.weight_bytes_read(b, step.weight_bits) + b * step.act_bytes_per_token)

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


@dataclass(frozen=True)
class RooflineQuery:
    """What ``expkit roofline`` asks: a ``model`` (catalog name, directory, config.json or cached Hub ID) on a
    ``gpu`` from the registry, or ``cpu`` (this machine's roof, measured), one ``phase`` at ``batch`` and
    ``context`` tokens, at ``weight_bits`` (None: as the checkpoint stores its weights). ``threads``: torch
    CPU threads for the measured roof (None: torch's)."""

    model: str | Path = "qwen2.5-0.5b"
    gpu: str = "H100"
    phase: str = "decode"
    batch: int = 1
    context: int = 1024
    weight_bits: int | None = None
    threads: int | None = None


@dataclass(frozen=True)
class RooflineResult:
    """The estimate of the asked phase, and those of every phase (for the figure), on one roof.

    Its JSON is the asked estimate's (``RooflineEstimate``); ``figure`` is the file a renderer wrote, if any.
    """

    estimate: RooflineEstimate
    phases: tuple[RooflineEstimate, ...]
    roof: Roof
    figure: Path | None = None

    def with_figure(self, path: Path | None) -> RooflineResult:
        """This result, naming the figure file written for it."""
        from dataclasses import replace

        return replace(self, figure=path)

    def __json__(self) -> RooflineEstimate:
        return self.estimate


def roof_for_device(gpu: str, *, threads: int | None = None) -> Roof:
    """The roof of ``gpu``: a registry GPU's datasheet roof, or for ``cpu`` this machine's roof measured now
    (``expkit.perf.roofs.measure_roof_here``)."""
    if gpu.strip().lower() == "cpu":
        from expkit.perf.roofs import measure_roof_here

        return measure_roof_here(threads=threads)
    return roof_for_gpu(gpu)


def estimate_roofline_for(query: RooflineQuery) -> RooflineResult:
    """The roofline of ``query``: the model read from its config, the roof (datasheet or measured), the asked
    phase estimated, and every phase (one roof, so a figure places them together).

    Raises:
        UsageError: an unknown GPU, a bad phase, batch, context or weight_bits (names the field).
        InputError: a model config that cannot be read (names the file and the key).
    """
    if query.phase not in PHASES:
        raise UsageError(f"phase {query.phase!r} is not one of {', '.join(PHASES)}")
    desc = load_model_description(query.model)
    roof = roof_for_device(query.gpu, threads=query.threads)
    phases = tuple(
        estimate_roofline(
            model=desc, roof=roof, phase=ph, batch=query.batch, context=query.context, weight_bits=query.weight_bits
        )
        for ph in PHASES
    )
    chosen = next(e for e in phases if e.phase == query.phase)
    return RooflineResult(estimate=chosen, phases=phases, roof=roof)
