"""What ``expkit mem`` answers, in one call: the ledger, its parameter counts, and the views asked for
(another tool's convention, all conventions side by side, replica measurements, an OOM reconciled).

Conventions are views applied here, by the caller of the ledger: the ledger itself knows none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from expkit.errors import UsageError
from expkit.memory.activation_fit import ActivationFit
from expkit.memory.conventions import ConventionComparison, compare_conventions, ledger_for_convention
from expkit.memory.ledger import Ledger, TrainingQuery, estimate_inference_memory, ledger_for_query
from expkit.memory.oom import OomExplanation, attribute_oom
from expkit.memory.params import ParameterCount, count_parameters

__all__ = ["MemoryReport", "build_memory_report"]


@dataclass(frozen=True)
class MemoryReport:
    """The ledger (under ``convention``), the expkit ledger it came from, the counts, and the views."""

    ledger: Ledger
    parameters: ParameterCount | None
    conventions: ConventionComparison | None = None
    measured: ActivationFit | None = None
    oom: OomExplanation | None = None

    @property
    def fits(self) -> bool | None:
        return self.ledger.fits


def build_memory_report(
    query: TrainingQuery,
    *,
    mode: str = "train",
    context: int = 4096,
    convention: str = "expkit",
    explain: bool = False,
    measure: bool = False,
    replica_seq: int = 256,
    oom: Any = None,
    on_step: Callable[[str], None] | None = None,
) -> MemoryReport:
    """The ledger of ``query`` and the views asked for.

    Args:
        query: the run (model, batch, seq, method, LoRA rank and targets, optimizer, precision, checkpointing,
            attention, GPUs, sharding, device, GPU name).
        mode: ``train`` or ``infer`` (then ``context`` tokens of KV cache; ``method`` qlora means NF4 weights).
        convention: ``expkit`` or another tool's (``zero``, ``hf``, ``deepspeed``, ``accelerate``), a view.
        explain: every convention side by side (training only).
        measure: activations measured on 1/2/4-layer replicas at ``replica_seq`` tokens.
        oom: an ``expkit.diagnose`` OOM record (phase, capacity, requested, allocated) to reconcile.
        on_step: progress callback.

    Raises:
        UsageError: an option that does not apply to the mode.
    """
    if mode not in ("train", "infer"):
        raise UsageError(f"--mode {mode!r} is not one of train, infer")
    if mode == "infer":
        if explain or oom is not None:
            raise UsageError(f"--{'explain' if explain else 'oom'} is for training ledgers; drop --mode infer")
        led = estimate_inference_memory(
            query.model,
            context=context,
            batch=query.batch,
            precision=query.precision,
            method="qlora" if query.method == "qlora" else "full",
            gpus=query.gpus,
            gpu=query.gpu,
            device=query.device,
        )
        return MemoryReport(ledger=led, parameters=None)
    base = ledger_for_query(query)
    count = count_parameters(
        query.model, lora_r=query.lora_r if query.method != "full" else None, lora_targets=query.lora_targets
    )
    led = ledger_for_convention(base, convention)
    comparison = None
    if explain:
        one = (
            ledger_for_query(replace(query, gpus=1, shard="none", gpu=None))
            if query.gpus > 1 and query.shard != "none"
            else None
        )
        comparison = compare_conventions(base, unsharded=one)
    fit = None
    groups = query.model.desc.layer_groups() if measure else ()
    if len(groups) > 1:
        kinds = "; ".join(f"{n} x {layer.label}" for layer, n in groups)
        raise UsageError(
            f"--measure fits one per-layer figure on 1/2/4-layer replicas, and this model has "
            f"{len(groups)} layer kinds ({kinds})",
            hint="the per-kind formula is checked against MoE/MLA replicas in `expkit labs run C4.2v`",
        )
    if measure:
        from expkit.memory.activation_fit import fit_activations

        if on_step:
            on_step(f"{query.model.name} at {replica_seq} tokens")
        fit = fit_activations(
            query.model,
            batch=query.batch,
            seq=query.seq,
            replica_seq=replica_seq,
            precision=query.precision,
            method="full" if query.method == "full" else "lora",
            lora_r=query.lora_r,
            attention=query.attention,
        )
    explanation = None
    if oom is not None:
        explanation = attribute_oom(
            base,
            phase=oom.phase,
            capacity_bytes=oom.capacity_bytes,
            requested_bytes=oom.requested_bytes,
            allocated_bytes=oom.allocated_bytes,
        )
    return MemoryReport(ledger=led, parameters=count, conventions=comparison, measured=fit, oom=explanation)
