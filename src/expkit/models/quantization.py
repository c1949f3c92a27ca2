"""Storage kinds of a checkpoint's weights: one class per quantization scheme, each saying which weights it
quantizes and what they cost in bytes, scales included.

Every scheme here quantizes the decoder layers' matmul weights (``GroupQuantized``: GPTQ/AWQ,
``Fp8Quantized``, ``BitsAndBytesQuantized``) or only the routed experts (``Mxfp4Quantized``, gpt-oss); the
embeddings, the output head, norms, biases and towers stay at their 16-bit bytes. The memory ledger's
stored weights and the roofline's bytes read per step both ask ``bytes_of``, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expkit.errors import InputError

__all__ = [
    "NF4",
    "BitsAndBytesQuantized",
    "CompressedTensorsQuantized",
    "Fp8Quantized",
    "GroupQuantized",
    "Mxfp4Quantized",
    "QuantizationSpec",
    "Unquantized",
    "WeightParams",
    "scheme_from_config",
]


@dataclass(frozen=True)
class WeightParams:
    """Weights split by how a scheme may store them: ``linear`` the decoder layers' matmul weights outside
    the routed experts (attention, dense MLP, shared experts, router), ``experts`` the routed experts,
    ``other`` everything else (embeddings, output head, norms, biases, towers)."""

    linear: float = 0.0
    experts: float = 0.0
    other: float = 0.0

    @property
    def total(self) -> float:
        return self.linear + self.experts + self.other

    def __add__(self, o: WeightParams) -> WeightParams:
        return WeightParams(self.linear + o.linear, self.experts + o.experts, self.other + o.other)


@dataclass(frozen=True)
class QuantizationSpec:
    """A storage scheme; the base is 16-bit (no quantization). ``method`` is ``quant_method`` as the config
    spells it (None when not quantized); ``bits`` the stored bits per quantized weight, scales included."""

    method: str | None = None
    bits: float = 16

    @property
    def quantizes_linear(self) -> bool:
        """Whether the decoder's non-expert matmul weights are stored at ``bits``."""
        return self.method is not None

    @property
    def quantizes_experts(self) -> bool:
        """Whether the routed experts are stored at ``bits``."""
        return self.method is not None

    def note(self) -> str | None:
        """What the scheme stores, in words (an entry of the description's approximations), or None."""
        return None

    def bytes_of(self, params: WeightParams, dense_bytes: float = 2) -> float:
        """Stored bytes of ``params``: the quantized parts at ``bits``, the rest at ``dense_bytes``."""
        q = self.bits / 8
        linear = q if self.quantizes_linear else dense_bytes
        experts = q if self.quantizes_experts else dense_bytes
        return params.linear * linear + params.experts * experts + params.other * dense_bytes

    def formula(self, params: WeightParams, dense_bytes: float = 2) -> str:
        """``bytes_of`` in words, with the numbers filled in."""
        if self.method is None:
            return f"{dense_bytes:g} B * {int(params.total):,} params"
        q = f"{self.method} {self.bits / 8:.4g} B"
        parts = []
        quantized = (params.linear if self.quantizes_linear else 0) + (params.experts if self.quantizes_experts else 0)
        parts.append(f"{q} * {int(quantized):,} quantized weights")
        rest = params.total - quantized
        parts.append(
            f"{dense_bytes:g} B * {int(rest):,} others (embeddings, head, norms"
            + (", non-expert layers)" if not self.quantizes_linear else ")")
        )
        return " + ".join(parts)


Unquantized = QuantizationSpec


@dataclass(frozen=True)
class GroupQuantized(QuantizationSpec):
    """GPTQ / AWQ: ``bits``-bit integer weights with an fp16 scale and a zero point per ``group_size`` values
    (``bits`` here includes them: b + (16 + b) / group)."""

    weight_bits: int = 4
    group_size: int = 128

    def note(self) -> str | None:
        extra = self.bits - self.weight_bits
        return (
            f"{self.method} {self.weight_bits}-bit weights, group {self.group_size}: +{extra:.3f} bits/weight of "
            "scales and zeros; decoder layers only; embeddings, output head, norms and towers stay 16-bit"
        )


@dataclass(frozen=True)
class Fp8Quantized(QuantizationSpec):
    """fp8 weights, with one fp32 scale per ``block`` (rows x cols) when the config gives a block size."""

    block: tuple[int, int] | None = None

    def note(self) -> str | None:
        if self.block is None:
            return None
        r, c = self.block
        return (
            f"fp8 weights with one fp32 scale per {r}x{c} block (+{32 / (r * c):.4f} bits/weight, counted) in the "
            "decoder layers; embeddings, output head, norms and towers stay 16-bit"
        )


@dataclass(frozen=True)
class CompressedTensorsQuantized(QuantizationSpec):
    """compressed-tensors (llm-compressor's checkpoints): ``weight_bits``-bit int or float weights, with one
    16-bit scale (and zero point when asymmetric) per group of ``group_size`` inputs (``strategy`` group), per
    output channel (channel) or per tensor; ``bits`` counts the group scales, not the per-channel ones."""

    weight_bits: int = 8
    strategy: str = "channel"
    group_size: int = 0
    kind: str = "float"

    def note(self) -> str | None:
        scales = (
            f"a 16-bit scale per {self.group_size} weights (counted)"
            if self.group_size
            else f"one 16-bit scale per {self.strategy} (not counted: at most 16 / in_features bits per weight)"
        )
        return (
            f"compressed-tensors {self.kind} {self.weight_bits}-bit weights, {scales}, in the decoder layers; "
            "embeddings, output head, norms and towers stay 16-bit (the config's ignore list is not read)"
        )


@dataclass(frozen=True)
class BitsAndBytesQuantized(QuantizationSpec):
    """bitsandbytes: NF4 with double quantization (4.127 bits, QLoRA paper sec. 3) or LLM.int8 (8 bits)."""


@dataclass(frozen=True)
class Mxfp4Quantized(QuantizationSpec):
    """OCP microscaling fp4 (gpt-oss): 4-bit e2m1 values in blocks of 32 with one 8-bit e8m0 scale per block,
    4 + 8/32 = 4.25 bits per weight, on the routed experts only; attention, router, embeddings and head stay
    16-bit (the checkpoint's ``modules_to_not_convert``)."""

    @property
    def quantizes_linear(self) -> bool:
        return False

    def note(self) -> str | None:
        return (
            f"{self.method} routed experts at {self.bits:g} bits/weight (4-bit values + an 8-bit scale per 32); "
            "attention, router, embeddings and output head stay 16-bit"
        )


# bitsandbytes NF4 with double quantization: 4 bits + 8-bit absmax per 64 + fp32 per 256 blocks
# (QLoRA paper, Dettmers et al. 2023, sec. 3: 0.127 bits/param of constants); QLoRA's frozen base.
NF4 = BitsAndBytesQuantized("bitsandbytes", 4 + 0.127)


def scheme_from_config(raw: dict[str, Any], source: str) -> QuantizationSpec:
    """The storage scheme ``quantization_config`` names (16-bit when there is none)."""
    q = raw.get("quantization_config")
    if q is None:
        return QuantizationSpec()
    if not isinstance(q, dict):
        raise InputError(f"quantization_config must be an object, got {type(q).__name__}", path=source)
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        block = q.get("weight_block_size")
        if block:
            return Fp8Quantized(method, 8 + 32 / (block[0] * block[1]), block=(int(block[0]), int(block[1])))
        return Fp8Quantized(method, 8)
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        group = q.get("group_size", q.get("q_group_size", 128))
        if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
            raise InputError(f"quantization_config.bits = {bits!r} is not 2, 3, 4 or 8", path=source)
        extra = 0.0 if not isinstance(group, int) or group <= 0 else (16 + bits) / group  # fp16 scale + zero
        return GroupQuantized(method, bits + extra, weight_bits=bits, group_size=group if isinstance(group, int) else 0)
    if method == "mxfp4":
        return Mxfp4Quantized(method, 4 + 8 / 32)  # e2m1 values + one e8m0 scale per 32 (OCP MX spec v1.0)
    if method == "compressed-tensors":
        return _compressed_tensors(q, source)
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            return BitsAndBytesQuantized(method, 4.127)  # NF4 + double quantization (QLoRA paper, sec. 3)
        if q.get("load_in_8bit"):
            return BitsAndBytesQuantized(method, 8)
    raise InputError(
        f"quantization_config.quant_method = {method or None!r} is not modeled "
        "(fp8, gptq, awq, mxfp4, compressed-tensors and bitsandbytes are)",
        path=source,
        hint="remove quantization_config to count the model at 16 bits",
    )


def _compressed_tensors(q: dict[str, Any], source: str) -> QuantizationSpec:
    """The one weight scheme of a compressed-tensors config (``config_groups.*.weights``); several different
    schemes, or bits other than 2, 4 and 8, are refused naming the field."""
    groups = q.get("config_groups")
    found = [g.get("weights") for g in groups.values() if isinstance(g, dict)] if isinstance(groups, dict) else []
    weights: list[dict[str, Any]] = [w for w in found if isinstance(w, dict)]
    if not weights or len(weights) != len(found):
        raise InputError(
            "quantization_config.config_groups gives no weights scheme (compressed-tensors)",
            path=source,
            hint="remove quantization_config to count the model at 16 bits",
        )
    schemes = {(w.get("num_bits"), w.get("type"), w.get("strategy"), w.get("group_size")) for w in weights}
    if len(schemes) != 1:
        raise InputError(
            f"quantization_config.config_groups has {len(schemes)} different weight schemes: not modeled",
            path=source,
            hint="remove quantization_config to count the model at 16 bits",
        )
    bits, kind, strategy, group = schemes.pop()
    if bits not in (2, 4, 8):
        raise InputError(f"quantization_config.config_groups weights num_bits = {bits!r} is not 2, 4 or 8", path=source)
    group = group if strategy == "group" and isinstance(group, int) and group > 0 else 0
    zero = 0 if weights[0].get("symmetric", True) else bits
    extra = (16 + zero) / group if group else 0.0
    return CompressedTensorsQuantized(
        "compressed-tensors",
        bits + extra,
        weight_bits=bits,
        strategy=str(strategy),
        group_size=group,
        kind=str(kind),
    )
