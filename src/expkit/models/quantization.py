"""Storage kinds of a checkpoint's weights: one class per quantization scheme, each saying which weights it
quantizes and what they cost in bytes, scales included.

Every scheme here quantizes the decoder layers' matmul weights (``GroupQuantized``: GPTQ/AWQ,
``Fp8Quantized``, ``BitsAndBytesQuantized``) or only the routed experts (``Mxfp4Quantized``, gpt-oss); the
embeddings, the output head, norms, biases and towers stay at their 16-bit bytes. The memory ledger's
stored weights and the roofline's bytes read per step both ask ``bytes_of``, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "NF4",
    "BitsAndBytesQuantized",
    "Fp8Quantized",
    "GroupQuantized",
    "Mxfp4Quantized",
    "QuantizationSpec",
    "Unquantized",
    "WeightParams",
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
