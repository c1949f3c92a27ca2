"""Saved-for-backward activation terms: what one decoder layer's kinds keep for backward, per token.

Each kind's spec (``attention.py``, ``mlp.py``) answers ``saved_terms(ctx)`` with these terms; the memory
ledger (``expkit.memory.activations``) sums them over the model's layers. ``SavedActivationContext`` holds
everything a term depends on besides the layer itself: widths, precision, frozen or trained weights, LoRA.
Derived by reading transformers' ``LlamaDecoderLayer``/``Qwen2DecoderLayer`` and peft's ``lora.Linear``, and
checked against ``saved_tensors_hooks`` measurements (``expkit.memory.replica``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LINEAR_GROUPS", "ActivationTerm", "SavedActivationContext"]

# The linears of a block grouped by the tensor they read (transformers' Llama/Qwen2 modeling code).
LINEAR_GROUPS: dict[str, tuple[str, ...]] = {
    "attn_in": ("q_proj", "k_proj", "v_proj"),
    "o_in": ("o_proj",),
    "mlp_in": ("gate_proj", "up_proj"),
    "down_in": ("down_proj",),
}


@dataclass(frozen=True)
class ActivationTerm:
    """One saved tensor (or group): ``bytes_per_token`` for one layer (or the fixed part), and why."""

    name: str
    bytes_per_token: float
    formula: str


@dataclass(frozen=True)
class SavedActivationContext:
    """What a layer's saved tensors depend on besides the layer: one training step's settings.

    ``resid``: bytes of the residual stream (fp32 under full mixed precision, 2 with a 16-bit frozen base);
    ``act``: bytes of a matmul output (2 under autocast); ``full``: every weight trained (else LoRA);
    ``targeted``: the block linears LoRA adapts; ``experts_targeted``: peft wraps the fused expert
    parameters; ``attention``: ``sdpa`` or ``eager``; ``device``: ``cuda`` or ``cpu``; ``source``: the encoder's
    tokens per sequence that cross-attention reads (encoder-decoder models).
    """

    hidden_size: int
    seq: int
    tokens: int
    resid: int
    act: int
    autocast: bool
    full: bool
    targeted: frozenset[str]
    experts_targeted: bool
    lora_r: int
    attention: str
    device: str
    source: int = 0  # encoder tokens a decoder layer's cross-attention reads (0: no encoder)

    @property
    def cast_bytes(self) -> int:
        """Bytes of a linear's saved input: its own 16-bit cast under autocast, else fp32."""
        return 2 if self.autocast else 4

    def savers(self, group: str) -> int:
        """How many linears of ``group`` (``LINEAR_GROUPS``) save their input: all when trained, else the
        adapted ones."""
        mods = LINEAR_GROUPS[group]
        return len(mods) if self.full else sum(m in self.targeted for m in mods)

    def linear_inputs(self, n: int, width: int, wname: str) -> tuple[int, str]:
        """(bytes per token, formula) of ``n`` linears reading one ``width``-wide input: under autocast each
        saves its own 16-bit cast; in fp32 they share the one input."""
        if self.autocast:
            return n * 2 * width, f"{n} linears * 16-bit cast of input 2{wname}"
        return (4 * width if n else 0), f"input shared by {n} linears, 4{wname}"

    @property
    def dropout_mask_bytes(self) -> int:
        """Bytes per element of a dropout's saved mask: a bool on CUDA (``native_dropout``), a scaled noise
        tensor of the input's dtype on the CPU (measured)."""
        return 1 if self.device == "cuda" else self.act

    def layer_norm_bytes(self, width: int) -> tuple[int, str]:
        """(bytes per token, formula) of one LayerNorm over ``width`` (BART, Whisper): its input, mean and
        rstd (the normed output is the next linear's saved input). CUDA autocast runs layer_norm in fp32
        (4 B each); CPU autocast runs it in the residual stream's dtype (measured: bf16 input, mean, rstd
        with a 16-bit LoRA base)."""
        b = 4 if (self.device == "cuda" or not self.autocast) else self.resid
        return b * (width + 2), f"x, mean, rstd at {b} B: {b} * (h + 2)"

    def norm_bytes(self, width: int) -> tuple[int, str]:
        """(bytes per token, formula) of one RMSNorm over ``width``: fp32 input, rsqrt, and the normed output
        when its weight is trained."""
        b = 4 * width + 4 + (self.resid * width if self.full else 0)
        f = "x fp32 4h + rsqrt 4" + (f" + normed {self.resid}h" if self.full else " (frozen weight: normed not saved)")
        return b, f
