"""What ``expkit mem`` answers, in one call: the ledger, its parameter counts, and the views asked for
(another tool's convention, all conventions side by side, replica measurements, an OOM reconciled).

Conventions are views applied here, by the caller of the ledger: the ledger itself knows none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from expkit.errors import UsageError
from expkit.memory.activation_fit import ActivationFit
from expkit.memory.conventions import ConventionComparison, compare_conventions, ledger_for_convention
from expkit.memory.inference import InferenceQuery, ledger_for_inference
from expkit.memory.ledger import Ledger, TrainingQuery, estimate_training_memory
from expkit.memory.oom import OomExplanation, attribute_oom
from expkit.memory.params import count_parameters
from expkit.models.counting import ParameterCount

__all__ = ["MemoryReport", "MemoryRequest", "build_memory_report"]


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

    @property
    def does_not_fit(self) -> str | None:
        """Why the run does not fit the named GPU (predicted peak vs its memory), None when it fits or no GPU
        was named."""
        led = self.ledger
        if led.fits is not False or led.gpu_memory_bytes is None:
            return None
        return (
            f"{led.model} does not fit on {led.gpu}: predicted peak {led.peak_bytes / 2**30:,.2f} GiB "
            f"> {led.gpu_memory_bytes / 2**30:,.2f} GiB"
        )

    def __json__(self) -> dict[str, Any]:
        """The ledger's fields at the top (total_params, lines, fits ...), then the views that were asked for."""
        out: dict[str, Any] = {f.name: getattr(self.ledger, f.name) for f in fields(self.ledger)}
        for key in ("parameters", "conventions", "measured", "oom"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class MemoryRequest:
    """What ``expkit mem`` asks: the run (``training``: model, batch, seq, method ...), the ``mode``
    (``train`` or ``infer``: then ``context`` tokens of KV cache, ``prompt`` of them prefilled at once,
    None: all; ``method`` qlora means NF4 weights), the view (``convention``: ``expkit`` or another tool's,
    ``explain``: every convention side by side), ``measure`` (activations on 1/2/4-layer replicas at
    ``replica_seq`` tokens) and ``oom`` (an ``expkit.diagnose`` OOM record to reconcile)."""

    training: TrainingQuery
    mode: str = "train"
    context: int = 4096
    prompt: int | None = None
    convention: str = "expkit"
    explain: bool = False
    measure: bool = False
    replica_seq: int = 256
    oom: Any = None

    def inference(self) -> InferenceQuery:
        """The inference query of this request's run."""
        q = self.training
        return InferenceQuery(
            model=q.model,
            context=self.context,
            prompt=self.prompt,
            batch=q.batch,
            precision=q.precision,
            method="qlora" if q.method == "qlora" else "full",
            gpus=q.gpus,
            device=q.device,
            gpu=q.gpu,
        )


def build_memory_report(request: MemoryRequest, *, on_step: Callable[[str], None] | None = None) -> MemoryReport:
    """The ledger of ``request`` and the views asked for.

    Args:
        request: the run and the views (see MemoryRequest).
        on_step: progress callback (called before replicas are measured).

    Raises:
        UsageError: an option that does not apply to the mode (names the field).
    """
    r = request
    if r.mode not in ("train", "infer"):
        raise UsageError(f"mode {r.mode!r} is not one of train, infer")
    if r.mode == "infer":
        if r.explain or r.oom is not None:
            raise UsageError(f"{'explain' if r.explain else 'oom'} is for training ledgers, not for mode infer")
        return MemoryReport(ledger=ledger_for_inference(r.inference()), parameters=None)
    query = r.training
    base = estimate_training_memory(query)
    count = count_parameters(
        query.model, lora_r=query.lora_r if query.method != "full" else None, lora_targets=query.lora_targets
    )
    comparison = _compare_conventions(base) if r.explain else None
    fit = _measure_activations(r, on_step) if r.measure else None
    explanation = None
    if r.oom is not None:
        explanation = attribute_oom(
            base,
            phase=r.oom.phase,
            capacity_bytes=r.oom.capacity_bytes,
            requested_bytes=r.oom.requested_bytes,
            allocated_bytes=r.oom.allocated_bytes,
        )
    led = ledger_for_convention(base, r.convention)
    return MemoryReport(ledger=led, parameters=count, conventions=comparison, measured=fit, oom=explanation)


def _compare_conventions(base: Ledger) -> ConventionComparison:
    """Every convention side by side; a sharded run is also shown unsharded on one GPU."""
    q = base.query
    assert q is not None  # a training ledger carries its query
    one = (
        estimate_training_memory(replace(q, gpus=1, shard="none", gpu=None))
        if q.gpus > 1 and q.shard != "none"
        else None
    )
    return compare_conventions(base, unsharded=one)


def _measure_activations(r: MemoryRequest, on_step: Callable[[str], None] | None) -> ActivationFit:
    """Activations measured on replicas (one layer kind only: the fit is one per-layer figure)."""
    query = r.training
    groups = query.model.layer_groups()
    if len(groups) > 1:
        kinds = "; ".join(f"{n} x {layer.label}" for layer, n in groups)
        raise UsageError(
            f"measure fits one per-layer figure on 1/2/4-layer replicas, and this model has "
            f"{len(groups)} layer kinds ({kinds})",
            hint="the per-kind formula is checked against MoE/MLA replicas in `expkit labs run C4.2v`",
        )
    from expkit.memory.activation_fit import FitQuery, fit_activations

    if on_step:
        on_step(f"{query.model.name} at {r.replica_seq} tokens")
    fit = FitQuery(
        batch=query.batch,
        seq=query.seq,
        replica_seq=r.replica_seq,
        precision=query.precision,
        method="full" if query.method == "full" else "lora",
        lora_r=query.lora_r,
        attention=query.attention,
    )
    return fit_activations(query.model, fit)
