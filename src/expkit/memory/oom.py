"""An out-of-memory error reconciled with the ledger: which block overflowed, and the remedies ranked.

Claim C4.6: an OOM is attributed by when it happens. Right after loading: the weights. In the first
backward or optimizer step: gradients and optimizer state. In forward, or still with LoRA: activations.
The numbers come from ``expkit.diagnose`` (``parse_oom_message``); this module only needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from expkit.errors import UsageError
from expkit.memory.ledger import Ledger, estimate_training_memory

__all__ = ["OomExplanation", "Remedy", "attribute_oom", "rank_remedies"]

PHASES = ("loading", "forward", "backward", "optimizer step")
_WEIGHT_LINES = ("fp32 master weights", "bf16 weights", "frozen base weights")
_STATE_LINES = ("Adam m", "Adam v", "SGD momentum", "Adafactor row/col stats")


@dataclass(frozen=True)
class Remedy:
    """One change, the predicted peak after it, what it saves and what it costs."""

    name: str
    option: str
    peak_bytes: int
    savings_bytes: int
    cost: str
    fits: bool | None


@dataclass(frozen=True)
class OomExplanation:
    """Which ledger block overflowed at the phase the OOM happened, and ranked remedies.

    ``cumulative_bytes`` is the ledger's running total per phase (what is live when that phase runs);
    ``overflow_phase`` the first phase whose running total exceeds ``capacity_bytes`` (None: the ledger
    predicts no overflow, so fragmentation or other processes are suspects).
    """

    phase: str | None
    capacity_bytes: int | None
    requested_bytes: int | None
    block: str
    block_bytes: int
    cumulative_bytes: dict[str, int]
    overflow_phase: str | None
    consistent: bool | None
    reason: str
    remedies: tuple[Remedy, ...]


def _fmt(n: int | float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _phase_totals(led: Ledger) -> dict[str, int]:
    weights = led.bytes_of(*_WEIGHT_LINES)
    state = led.bytes_of(*_STATE_LINES)
    acts = led.bytes_of("activations", "logits / loss")
    grads = led.bytes_of("gradients")
    tmp = led.bytes_of("temporaries")
    over = led.bytes_of("runtime overhead")
    return {
        "loading": weights + over,
        "forward": weights + over + acts,
        "backward": weights + over + acts + grads + tmp,
        "optimizer step": weights + over + grads + state + tmp,
    }


_BLOCK_OF_PHASE = {
    "loading": ("weights", _WEIGHT_LINES),
    "forward": ("activations", ("activations", "logits / loss")),
    "backward": ("gradients + activations", ("gradients", "activations", "logits / loss", "temporaries")),
    "optimizer step": ("optimizer state", _STATE_LINES),
}


@dataclass(frozen=True)
class _Change:
    """One option a remedy changes in the ledger's query: its name, the flag, the change and its cost."""

    name: str
    option: str
    change: dict[str, Any]
    cost: str


def _candidate_changes(led: Ledger) -> list[_Change]:
    """The one-option changes that apply to this run (a change it already has is left out)."""
    changes = []
    if led.grad_ckpt == "none":
        changes.append(
            _Change(
                "gradient checkpointing",
                "--grad-ckpt full",
                {"grad_ckpt": "full"},
                "~33% more compute (one extra forward per step)",
            )
        )
    if led.method == "full":
        changes.append(
            _Change("LoRA", "--method lora", {"method": "lora"}, "trains ~1% of the weights; quality may differ")
        )
    if led.method != "qlora":
        changes.append(
            _Change(
                "QLoRA",
                "--method qlora",
                {"method": "qlora"},
                "NF4 base: slower matmuls (dequantize), quantization error",
            )
        )
    if led.optimizer == "adamw":
        changes.append(
            _Change(
                "8-bit Adam",
                "--optimizer adamw8bit",
                {"optimizer": "adamw8bit"},
                "needs bitsandbytes; block-wise quantized state",
            )
        )
    if led.gpus > 1 and led.shard != "zero3":
        changes.append(
            _Change(
                "ZeRO-3 / FSDP",
                "--shard zero3",
                {"shard": "zero3"},
                "all-gathers every layer each step: more communication",
            )
        )
    if led.batch > 1:
        half = led.batch // 2
        changes.append(
            _Change(
                f"micro-batch {half} x 2 accumulation",
                f"--batch {half}",
                {"batch": half},
                "same effective batch, lower GPU utilization",
            )
        )
    return changes


def _fused_loss_remedy(led: Ledger, capacity_bytes: int | None) -> Remedy | None:
    """Fused cross-entropy: the vocabulary-sized tensors shrink to one slice of tokens at a time (Liger kernel)."""
    vocab_tmp = led.bytes_of("logits / loss") + (led.bytes_of("temporaries") if "loss" in led.peak_phase else 0)
    if not vocab_tmp:
        return None
    after = led.peak_bytes - vocab_tmp
    return Remedy(
        "fused cross-entropy",
        "(code: a fused loss over slices of tokens, e.g. Liger kernel)",
        after,
        vocab_tmp,
        "a few % compute; needs a fused loss function",
        None if capacity_bytes is None else after <= capacity_bytes,
    )


def rank_remedies(led: Ledger, *, model: Any = None, capacity_bytes: int | None = None) -> tuple[Remedy, ...]:
    """Alternative ledgers, one change each to the ledger's own query (``dataclasses.replace``), ranked by
    predicted savings of the peak (largest first). Every other option of the run (LoRA rank and targets,
    GPUs, sharding, device) is kept. ``model`` is accepted for old callers and not needed."""
    if led.mode != "train":
        raise UsageError("remedies are for training ledgers (mode train)")
    if led.query is None:
        raise UsageError("this ledger carries no query to vary (build it with estimate_training_memory)")
    remedies = []
    for c in _candidate_changes(led):
        alt = estimate_training_memory(replace(led.query, **c.change))
        fits = None if capacity_bytes is None else alt.peak_bytes <= capacity_bytes
        remedies.append(Remedy(c.name, c.option, alt.peak_bytes, led.peak_bytes - alt.peak_bytes, c.cost, fits))
    fused = _fused_loss_remedy(led, capacity_bytes)
    if fused is not None:
        remedies.append(fused)
    return tuple(sorted(remedies, key=lambda r: -r.savings_bytes))


def attribute_oom(
    led: Ledger,
    *,
    model: Any = None,
    phase: str | None,
    capacity_bytes: int | None = None,
    requested_bytes: int | None = None,
    allocated_bytes: int | None = None,
) -> OomExplanation:
    """Reconcile an OOM (its phase and the numbers of its message) with a training ledger.

    Args:
        led: the ledger of the run that failed (same model and options).
        model: not needed (the remedies vary ``led.query``); accepted for old callers.
        phase: ``loading``, ``forward``, ``backward`` or ``optimizer step`` (from ``expkit.diagnose``), or None.
        capacity_bytes: the GPU's total capacity from the message (else ``led.gpu_memory_bytes``).
        requested_bytes: the failed allocation's size.
        allocated_bytes: what PyTorch had allocated when it failed (compared with the ledger's running total).

    Returns:
        OomExplanation naming the overflowing block and the remedies ranked by predicted savings.

    Raises:
        UsageError: an unknown phase.
    """
    if phase is not None and phase not in PHASES:
        raise UsageError(f"phase {phase!r} is not one of {', '.join(PHASES)}")
    capacity = capacity_bytes if capacity_bytes is not None else led.gpu_memory_bytes
    totals = _phase_totals(led)
    overflow = None
    if capacity is not None:
        overflow = next((p for p in PHASES if totals[p] > capacity), None)
    at = phase or overflow or "backward"
    block, names = _BLOCK_OF_PHASE[at]
    block_bytes = led.bytes_of(*names)
    if phase is None:
        reason = (
            f"the traceback names no phase; the ledger predicts the first overflow at {overflow}"
            if overflow
            else "the traceback names no phase and the ledger predicts no overflow"
        )
        consistent = None
    elif overflow is None:
        reason = (
            f"OOM in {phase}, but the ledger's {phase} total ({_fmt(totals[phase])}) fits"
            + (f" in {_fmt(capacity)}" if capacity else "")
            + ": suspect fragmentation (reserved >> allocated), another process on the GPU, or options that "
            "differ from the run's"
        )
        consistent = False if capacity is not None else None
    else:
        consistent = phase == overflow
        reason = (
            f"OOM in {phase}: the {block} block ({_fmt(block_bytes)}) is what this phase adds; "
            f"the ledger's running total reaches {_fmt(totals[phase])} of "
            f"{_fmt(capacity)}"
            if capacity
            else f"OOM in {phase}: the {block} block"
        )
        if not consistent:
            reason += f" (the ledger predicted the first overflow at {overflow})"
    if allocated_bytes is not None and phase is not None:
        expected = totals[phase]
        reason += (
            f"; PyTorch had {_fmt(allocated_bytes)} allocated"
            + (f" + {_fmt(requested_bytes)} requested" if requested_bytes else "")
            + f", the ledger expects {_fmt(expected)} by the end of {phase}"
        )
    return OomExplanation(
        phase=phase,
        capacity_bytes=capacity,
        requested_bytes=requested_bytes,
        block=block,
        block_bytes=block_bytes,
        cumulative_bytes=totals,
        overflow_phase=overflow,
        consistent=consistent,
        reason=reason,
        remedies=rank_remedies(led, model=model, capacity_bytes=capacity),
    )
