"""Lab C4.6: attribute an OOM by when it happens. One training step is run under a sweep of simulated device
capacities on the CPU (an even grid, not chosen per phase); every OOM is attributed twice: by the seed's rule
from the phase in its traceback (plus a LoRA rerun), and from the measured allocation against the ledger."""

from __future__ import annotations

from expkit.labs.base import Cause, KOfN, LabContext, LabOutput, Measurement, SeedFigure, judged
from expkit.labs.registry import lab

SEED = SeedFigure(
    "attribution",
    "OOM attributed by its phase",
    None,
    "",
    "right after load -> weights; after the first backward -> gradients + optimizer state; "
    "still OOM with LoRA -> activations",
)
MIB = 2**20
# two runs: one whose activations dominate (long sequence), one whose training state dominates (wide, short).
# Untied embeddings: run_step_capped loads on the meta device then to_empty(), which unties them (measured 19.8 MiB
# for a tied 16 MiB model), so the ledger must count the LM head apart too
SCENARIOS = (
    (
        "activation-heavy",
        dict(
            model_type="qwen2",
            hidden_size=256,
            intermediate_size=768,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=4000,
            tie_word_embeddings=False,
        ),
        1024,
    ),
    (
        "state-heavy",
        dict(
            model_type="qwen2",
            hidden_size=512,
            intermediate_size=1376,
            num_hidden_layers=2,
            num_attention_heads=8,
            num_key_value_heads=2,
            vocab_size=8000,
            tie_word_embeddings=False,
        ),
        64,
    ),
)
# the ledger is within 10% of measured peaks (lab C4.2v); a demand that close to a phase boundary may be either side
LEDGER_TOL = 0.10
# the ledger's block for the phase whose running total first covers the failed demand (memory.oom's phases).
# Shared assumption: this is the same phase-to-block order the seed's rule uses (weights while loading, activations
# in forward, gradients in backward, optimizer state at the step); attribution (2) reads the measured bytes, not the
# traceback's phase, but it is not independent of that order, and the lab says so
LEDGER_BLOCK = {
    "loading": "weights",
    "forward": "activations",
    "backward": "gradients",
    "optimizer step": "optimizer state",
}


def seed_rule_block(phase: str | None, *, still_oom_with_lora: bool | None) -> frozenset[str]:
    """The blocks the seed's rule names for an OOM in ``phase`` (the LoRA rerun decides a forward OOM)."""
    if phase == "loading":
        return frozenset({"weights"})
    if phase in ("backward", "optimizer step"):  # after the first backward
        return frozenset({"gradients", "optimizer state"})
    if phase == "forward":
        return frozenset({"activations"}) if still_oom_with_lora else frozenset({"gradients", "optimizer state"})
    return frozenset()


def ledger_blocks(led, demand_bytes: int, tol: float = LEDGER_TOL) -> frozenset[str]:  # noqa: ANN001
    """The blocks :func:`ledger_block` names for ``demand_bytes`` scaled by 1 - tol, 1 and 1 + tol."""
    return frozenset(ledger_block(led, int(demand_bytes * f))[0] for f in (1 - tol, 1.0, 1 + tol))


def ledger_block(led, demand_bytes: int) -> tuple[str, str]:  # noqa: ANN001 - a Ledger
    """The block the ledger says was being allocated when ``demand_bytes`` (allocated + requested) were needed:
    the first phase (loading, forward, backward, optimizer step) whose predicted running total covers it."""
    w = led.bytes_of("fp32 master weights", "bf16 weights", "frozen base weights")
    a = led.bytes_of("activations", "logits / loss")
    g = led.bytes_of("gradients") + led.bytes_of("temporaries")
    s = led.bytes_of("Adam m", "Adam v")
    totals = {"loading": w, "forward": w + a, "backward": w + a + g, "optimizer step": w + g + s}
    for phase, total in totals.items():
        if demand_bytes <= total:
            return LEDGER_BLOCK[phase], phase
    return "beyond the ledger", "none"


@lab(id="C4.6", title="Attribute an OOM by when it happens", claims=("C4.6",), seed=(SEED,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.diagnose import diagnose_text
    from expkit.memory import estimate_training_memory
    from expkit.memory.architecture import spec_from_dict
    from expkit.memory.capacity import run_step_capped

    grid = 5 if ctx.quick else 10
    rows, lines, peaks, misses = [], [], [], []
    for scenario, raw, seq in SCENARIOS:
        spec = spec_from_dict(raw, name=f"qwen2-h{raw['hidden_size']}-L{raw['num_hidden_layers']}", source="lab C4.6")
        led = estimate_training_memory(spec, seq=seq, method="full", precision="fp32", device="cpu")
        peaks.append(f"{scenario} {spec.name} at {seq} tokens: {led.peak_bytes / MIB:.1f} MiB at {led.peak_phase}")
        # an even grid of capacities up to the predicted peak: where each OOM lands is measured, not chosen
        for cap in (int(led.peak_bytes * (i + 0.5) / grid) for i in range(grid)):
            text = run_step_capped(spec, cap_bytes=cap, seq=seq, method="full", seed=ctx.seed)
            oom = diagnose_text(text).explanation.oom if text else None
            if oom is None:
                lines.append(f"{scenario}, {cap / MIB:.1f} MiB: the step fitted")
                continue
            lora_oom = None
            if oom.phase == "forward":  # the seed's third clause: rerun with LoRA at the same capacity
                lora_oom = run_step_capped(spec, cap_bytes=cap, seq=seq, method="lora", seed=ctx.seed) is not None
            named = seed_rule_block(oom.phase, still_oom_with_lora=lora_oom)
            demand = (oom.allocated_bytes or 0) + (oom.requested_bytes or 0)
            block, at = ledger_block(led, demand)
            near = ledger_blocks(led, demand)
            rows.append((oom.phase, bool(named & near)))
            if not named & near:
                fwd = led.bytes_of("fp32 master weights", "activations", "logits / loss")
                misses.append((oom.phase, lora_oom, demand, fwd))
            lines.append(
                f"{scenario}, {cap / MIB:.1f} MiB: OOM in {oom.phase}"
                + ("" if lora_oom is None else f" (LoRA rerun: {'still OOM' if lora_oom else 'fits'})")
                + f"; seed's rule -> {' + '.join(sorted(named)) or '-'}; allocated + requested "
                f"{demand / MIB:.1f} MiB -> ledger: {block} ({at})"
                + (f", within +-{LEDGER_TOL:.0%}: {' or '.join(sorted(near))}" if len(near) > 1 else "")
            )
    agree = sum(ok for _, ok in rows)
    phases = sorted({p or "none" for p, _ in rows})
    cause = None
    if misses and all(ph == "forward" and lora for ph, lora, _, _ in misses):
        worst = max(d / f for _, _, d, f in misses)
        cause = Cause(
            "forward OOMs past the ledger's forward total (demand / total)",
            worst,
            f"{len(misses)} forward OOM(s) whose allocated + requested bytes exceed the ledger's weights + "
            "activations + logits (the ledger leaves out the forward's transient loss tensors); the phase "
            "and the LoRA rerun (still OOM) both say activations, so the miss is the ledger's",
            unit="x",
            measured_by="the allocator's allocated + requested bytes at each OOM, over the ledger's forward lines",
        )
    ms = [
        judged(
            "attribution",
            "OOMs where the seed's phase rule names the block the measured allocation hits",
            agree,
            "OOMs",
            rule=KOfN(len(rows), len(rows), source="every OOM of the sweep"),
            seed=SEED,
            cause=cause,
            detail=f"{len(rows)} OOMs over {len(SCENARIOS)} x {grid} capacities (phases: {', '.join(phases)}); both "
            "attributions name blocks by one phase-to-block order (shared assumption); " + "; ".join(lines),
        ),
        Measurement(
            "ooms", "capacities that ran out of memory", len(rows), "OOMs", detail=f"of {len(SCENARIOS) * grid}"
        ),
        *(
            Measurement(f"{ph.replace(' ', '_')}_ooms", f"OOMs in {ph}", sum(p == ph for p, _ in rows), "OOMs")
            for ph in ("loading", "forward", "backward", "optimizer step")
        ),
        Measurement("ledger_peaks", "predicted peaks of the two steps (ledger, fp32, CPU)", "; ".join(peaks), ""),
    ]
    explanation = (
        f"One fp32 AdamW training step of two small models (one activation-heavy, one state-heavy) run under "
        f"{grid} simulated device capacities each, an even grid up to the ledger's predicted peak: every tensor's "
        "storage is counted and the allocation past the cap raises torch.OutOfMemoryError in CUDA's format, so the "
        "traceback carries the real frames of the call that failed. Each OOM is attributed twice, independently: "
        "(1) the seed's rule from the phase expkit why reads off the frames (loading -> weights; backward or "
        "optimizer step -> gradients + optimizer state; a forward OOM is rerun with LoRA at the same capacity: "
        "still OOM -> activations); (2) the allocation the message reports (allocated + requested) placed on the "
        "ledger's running total (weights, + activations, + gradients, then optimizer state), within the ledger's "
        f"+-{LEDGER_TOL:.0%} (lab C4.2v). They agree on {agree} of {len(rows)} OOMs. The two are independent in "
        "what they read (the traceback's frames vs the allocator's bytes) but not in how they name a block: both "
        "use one phase-to-block order (weights while loading, activations in forward, gradients in backward, "
        "optimizer state at the step), so an allocation order unlike it would fool both alike.\n\n" + "\n".join(lines)
    )
    return LabOutput(measurements=tuple(ms), explanation=explanation)
