"""Other tools' memory conventions, reproduced as ledgers, and why each differs from expkit's, line by line.

- zero: the ZeRO paper's model states, 16 B/param (Rajbhandari et al. 2020, sec. 3.1 and 5.1).
- hf: Hugging Face "Model Memory Anatomy": 6 (fp32 + 16-bit weights) + 4 (grads) + 8 (AdamW) = 18 B/param.
- deepspeed: ``estimate_zero2_model_states_mem_needs`` 4P + 16P/N and ``estimate_zero3_...`` 4 * largest
  layer + 18P/N (no offload), deepspeed/runtime/zero/stage_1_and_2.py and stage3.py.
- accelerate: ``accelerate estimate-memory`` prints the largest of its stages (model 4P, gradients 6P,
  optimizer 8P, step 8P in 16-bit), not their sum (accelerate/commands/estimate.py,
  ``estimate_training_usage``).
None of them counts activations.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from expkit.errors import UsageError
from expkit.memory.ledger import Ledger, LedgerLine

__all__ = ["CONVENTIONS", "ComparisonRow", "ConventionComparison", "compare_conventions", "ledger_for_convention"]

CONVENTIONS = ("expkit", "zero", "hf", "deepspeed", "accelerate")
_NO_ACT = "not counted by this convention"


@dataclass(frozen=True)
class ComparisonRow:
    """One line name and its bytes under each convention (None: the convention has no such line)."""

    line: str
    bytes_by_convention: dict[str, int | None]
    why: str


@dataclass(frozen=True)
class ConventionComparison:
    """expkit's ledger beside the other tools', with per-GPU totals and model-state bytes per trainable
    parameter on one unsharded GPU (empty when the ledger is sharded and no unsharded ledger was given)."""

    conventions: tuple[str, ...]
    rows: tuple[ComparisonRow, ...]
    per_gpu_bytes: dict[str, int]
    model_state_bytes_per_param: dict[str, float]


def _lines_zero(b: Ledger) -> list[LedgerLine]:
    P, Pt, N = b.total_params, b.trainable_params, b.gpus
    frozen = P - Pt if b.method != "full" else 0
    n_w = N if b.shard in ("zero3", "fsdp") else 1
    n_g = N if b.shard in ("zero2", "zero3", "fsdp") else 1
    n_o = N if b.shard != "none" else 1
    return [
        LedgerLine(
            "bf16 weights", 2 * (Pt + frozen) // n_w, f"2 B * {Pt + frozen:,}" + (f" / {n_w}" if n_w > 1 else "")
        ),
        LedgerLine("gradients", 2 * Pt // n_g, f"2 B * {Pt:,} (16-bit)" + (f" / {n_g}" if n_g > 1 else "")),
        LedgerLine("fp32 master weights", 4 * Pt // n_o, f"4 B * {Pt:,}" + (f" / {n_o}" if n_o > 1 else "")),
        LedgerLine("Adam m", 4 * Pt // n_o, f"4 B * {Pt:,}" + (f" / {n_o}" if n_o > 1 else "")),
        LedgerLine("Adam v", 4 * Pt // n_o, f"4 B * {Pt:,}" + (f" / {n_o}" if n_o > 1 else "")),
        LedgerLine("activations", 0, _NO_ACT),
    ]


def _lines_hf(b: Ledger) -> list[LedgerLine]:
    P, Pt, N = b.total_params, b.trainable_params, b.gpus
    frozen = P - Pt if b.method != "full" else 0
    # the docs describe one GPU; the split over GPUs is applied as in expkit's ledger so lines compare
    n_w = N if b.shard in ("zero3", "fsdp") else 1
    n_g = N if b.shard in ("zero2", "zero3", "fsdp") else 1
    n_o = N if b.shard != "none" else 1

    def d(n: int) -> str:
        return f" / {n}" if n > 1 else ""

    return [
        LedgerLine("fp32 master weights", 4 * Pt // n_w, f"4 B * {Pt:,} (fp32 copy){d(n_w)}"),
        LedgerLine("bf16 weights", 2 * (Pt + frozen) // n_w, f"2 B * {Pt + frozen:,} (16-bit copy){d(n_w)}"),
        LedgerLine("gradients", 4 * Pt // n_g, f"4 B * {Pt:,}{d(n_g)}"),
        LedgerLine("Adam m", 4 * Pt // n_o, f"4 B * {Pt:,}{d(n_o)}"),
        LedgerLine("Adam v", 4 * Pt // n_o, f"4 B * {Pt:,}{d(n_o)}"),
        LedgerLine("activations", 0, "'depends on sequence length, hidden size and batch' (no formula given)"),
    ]


def _lines_deepspeed(b: Ledger, largest_layer_params: int) -> list[LedgerLine]:
    P, N = b.trainable_params, b.gpus
    if b.shard in ("zero3", "fsdp"):
        return [
            LedgerLine(
                "largest layer (fp32)", 4 * largest_layer_params, f"4 B * {largest_layer_params:,} largest layer"
            ),
            LedgerLine("model states", 18 * P // N, f"18 B * {P:,} / {N} GPUs"),
            LedgerLine("activations", 0, _NO_ACT),
        ]
    return [
        LedgerLine("16-bit weights + grads", 4 * P, f"4 B * {P:,} (2 + 2, not sharded in ZeRO-2)"),
        LedgerLine("optimizer states", 16 * P // N, f"16 B * {P:,} / {N} GPUs (fp32 master, m, v, grad)"),
        LedgerLine("activations", 0, _NO_ACT),
    ]


def _lines_accelerate(b: Ledger) -> list[LedgerLine]:
    P = b.trainable_params
    if b.precision == "fp32":
        stages = {"model": 4 * P, "gradients": 4 * P, "optimizer": 8 * P, "step": 16 * P}
    else:
        stages = {"model": 4 * P, "gradients": 6 * P, "optimizer": 8 * P, "step": 8 * P}
    name = max(stages, key=stages.__getitem__)
    listing = ", ".join(f"{k} {v / P:.0f}P" for k, v in stages.items())
    return [
        LedgerLine(
            "Training using Adam (peak vRAM)",
            stages[name],
            f"max({listing}) = {name}: the largest single stage, not the sum",
        ),
        LedgerLine("activations", 0, _NO_ACT),
    ]


def ledger_for_convention(base: Ledger, convention: str, *, largest_layer_params: int | None = None) -> Ledger:
    """Re-express ``base`` (an expkit training ledger) under another tool's convention.

    Raises:
        UsageError: unknown convention (lists them).
    """
    if convention not in CONVENTIONS:
        raise UsageError(f"convention {convention!r} is not one of {', '.join(CONVENTIONS)}")
    if convention == "expkit":
        return base
    if convention == "zero":
        lines = _lines_zero(base)
    elif convention == "hf":
        lines = _lines_hf(base)
    elif convention == "deepspeed":
        if largest_layer_params is None:
            largest_layer_params = base.largest_layer_params
        lines = _lines_deepspeed(base, largest_layer_params)
    else:
        lines = _lines_accelerate(base)
    total = sum(ln.bytes for ln in lines)
    return replace(
        base,
        convention=convention,
        lines=tuple(lines),
        per_gpu_bytes=total,
        total_bytes=total * base.gpus,
        peak_bytes=total,
        peak_phase="(the convention's total)",
        fits=None if base.fits is None else total <= (base.gpu_memory_bytes or 0),
    )


_WHY = {
    "fp32 master weights": "zero/hf: 4 B per trainable param as expkit; accelerate folds it into 'model'",
    "bf16 weights": "expkit: autocast's 16-bit copies of matmul weights only (measured); zero/hf: every param",
    "gradients": "expkit/hf: fp32 grads (autocast accumulates into fp32 .grad); zero: 16-bit grads (2 B)",
    "Adam m": "4 B everywhere (8-bit Adam: 1 B)",
    "Adam v": "4 B everywhere (8-bit Adam: 1 B)",
    "activations": "only expkit counts them: the block people actually run out of",
    "logits / loss": "only expkit: fp32 log-probs over the vocabulary (HF upcasts logits for the loss)",
    "temporaries": "only expkit: loss-backward grads or optimizer-step copies at the peak",
    "runtime overhead": "only expkit: CUDA context + allocator slack (estimate)",
    "largest layer (fp32)": "deepspeed ZeRO-3: 4 B * the largest module's own params (gather buffer)",
    "model states": "deepspeed ZeRO-3: 18 B/param split over the GPUs (16 model state + 2 for 16-bit params)",
    "16-bit weights + grads": "deepspeed ZeRO-2: 2 + 2 B/param on every GPU",
    "optimizer states": "deepspeed ZeRO-2: 16 B/param (fp32 master, grad, m, v) split over the GPUs",
    "Training using Adam (peak vRAM)": "accelerate: the largest of its stages, not their sum; one GPU, no sharding",
}


def compare_conventions(base: Ledger, *, unsharded: Ledger | None = None) -> ConventionComparison:
    """expkit's training ledger beside zero, hf, deepspeed and accelerate, line by line with the reason.

    Args:
        base: an expkit training ledger.
        unsharded: the same run on one GPU, for the bytes-per-parameter row when ``base`` is sharded.

    Example:
        >>> from expkit.memory import estimate_training_memory
        >>> cmp = compare_conventions(estimate_training_memory("llama-2-7b", seq=4096))
        >>> round(cmp.model_state_bytes_per_param["hf"])
        18
    """
    if base.mode != "train" or base.convention != "expkit":
        raise UsageError("compare_conventions needs an expkit training ledger")
    ledgers = {c: ledger_for_convention(base, c) for c in CONVENTIONS}
    names: list[str] = []
    for led in ledgers.values():
        names += [ln.name for ln in led.lines if ln.name not in names]
    rows = []
    for name in names:
        vals = {c: next((ln.bytes for ln in led.lines if ln.name == name), None) for c, led in ledgers.items()}
        rows.append(ComparisonRow(name, vals, _WHY.get(name, "this tool's own block (see its formula)")))
    # bytes per trainable parameter of the model state, on one unsharded GPU (sharding only divides)
    one = unsharded or (base if base.gpus == 1 or base.shard == "none" else None)
    non_state = ("activations", "logits / loss", "temporaries", "runtime overhead")
    per_param: dict[str, float] = {}
    if one is not None:
        for c in CONVENTIONS:
            led = ledger_for_convention(one, c)
            per_param[c] = sum(ln.bytes for ln in led.lines if ln.name not in non_state) / max(one.trainable_params, 1)
    return ConventionComparison(
        conventions=CONVENTIONS,
        rows=tuple(rows),
        per_gpu_bytes={c: led.per_gpu_bytes for c, led in ledgers.items()},
        model_state_bytes_per_param=per_param,
    )
