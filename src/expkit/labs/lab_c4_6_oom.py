"""Lab C4.6: attribute an OOM by when it happens. One training step is run under a sweep of simulated device
capacities on the CPU (an even grid, not chosen per phase); every OOM is attributed twice, independently: by the
seed's rule from the phase in its traceback (plus a LoRA rerun), and by ablation: the step rerun at the same capacity
with the activations, or the gradients and optimizer state, taken out. The allocation placed on the ledger's running
total is shown beside them, unjudged (it names blocks by the same phase order as the seed's rule)."""

from __future__ import annotations

from expkit.labs.base import KOfN, LabContext, LabOutput, Measurement, RuleChange, SeedFigure, judged
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
# in forward, gradients in backward, optimizer state at the step), so this placement is shown, not judged: the judged
# second attribution is the ablation, which reads neither the phase's block nor the ledger
LEDGER_BLOCK = {
    "loading": "weights",
    "forward": "activations",
    "backward": "gradients",
    "optimizer step": "optimizer state",
}


# attribution (2), by ablation: the step rerun at the same capacity with one block taken out; the blocks whose removal
# lets the step fit are the ones the OOM is attributed to. Neither the phase nor the ledger is read.
ABLATIONS = {
    "activations": "the same step on 2 tokens instead of the sequence (weights, gradients, Adam's state unchanged)",
    "gradients + optimizer state": "each gradient applied by plain SGD in a post-accumulate-grad hook and freed at "
    "once (no gradient block, no optimizer state; the sequence unchanged)",
}
GRAD_STATE = frozenset({"gradients", "optimizer state"})


PHASE_ORDER = ("loading", "forward", "backward", "optimizer step")

# issue 36: when and why the rule changed after the lab first declared it (issue 12), from `git log -p`
RULE_HISTORY = (
    RuleChange(
        "attribution",
        "2026-12-02",
        "155c8ac",
        first="OOMs where the seed's phase rule and the allocation placed on the ledger's running total (+-10%) name "
        "a common block: every OOM of the sweep",
        changed="OOMs where the seed's phase rule and an ablation (the step rerun at the same capacity with the "
        "activations, or the gradients and optimizer state, taken out) name a common block: every OOM of the sweep",
        why="the ledger's placement names blocks by the same phase order as the seed's rule, so their agreement was "
        "no independent evidence (issue 22); the first count is shown beside the judged one (ledger_agree)",
        seed_text="'OOM 按爆的时机归因：加载后 → 权重；第一步 backward 后 → 梯度 + 状态；加了 LoRA 还 OOM → 看激活' "  # noqa: RUF001 - the seed's own words
        "(attribute an OOM by when it blows up: after loading -> weights; after the first backward -> gradients + "
        "state; still OOM with LoRA added -> look at the activations): the seed itself attributes by rerunning with "
        "blocks taken out (LoRA removes the gradients and optimizer state), which the ablation does for every OOM",
    ),
)


def run_step_ablated(spec, *, cap_bytes: int, seq: int, ablate: frozenset[str], seed: int = 0) -> str | None:  # noqa: ANN001
    """One fp32 training step of ``spec`` (loaded as memory.capacity loads it) in ``cap_bytes`` with the blocks in
    ``ablate`` removed: ``activations`` (2 tokens instead of ``seq``) and/or ``gradients`` + ``optimizer state``
    (each gradient applied by SGD and freed in backward, no AdamW). Returns the OOM traceback text, None when the
    step fits. With nothing removed it is the step of ``memory.capacity.run_step_capped``."""
    import traceback
    import warnings

    import torch
    from transformers import AutoConfig

    from expkit.memory.capacity import capped_memory, load_empty

    raw = {k: v for k, v in spec.raw.items() if k not in ("model_type", "architectures", "transformers_version")}
    cfg = AutoConfig.for_model(spec.model_type, **raw)
    torch.manual_seed(seed)
    ids = torch.randint(0, spec.vocab_size, (1, 2 if "activations" in ablate else seq))
    in_backward = ablate >= GRAD_STATE

    def sgd_and_free(p) -> None:  # noqa: ANN001 - a parameter whose gradient is complete
        p.data.add_(p.grad, alpha=-1e-4)
        p.grad = None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with capped_memory(cap_bytes):
                model = load_empty(cfg)
                if in_backward:
                    for p in model.parameters():
                        p.register_post_accumulate_grad_hook(sgd_and_free)
                opt = None if in_backward else torch.optim.AdamW(model.parameters(), lr=1e-4)
                loss = model(input_ids=ids.clone(), labels=ids.clone()).loss
                loss.backward()
                if opt is not None:
                    opt.step()
        except torch.OutOfMemoryError:
            return traceback.format_exc()
    return None


def got_past(phase: str | None, failed_in: str) -> bool:
    """Whether a rerun whose OOM came in ``phase`` (None: it fitted) got past the phase the step ``failed_in``."""
    if phase is None:
        return True
    order = {p: i for i, p in enumerate(PHASE_ORDER)}
    return order.get(phase, -1) > order.get(failed_in, len(PHASE_ORDER))


def ablation_blocks(past: dict[str, bool]) -> frozenset[str]:
    """The blocks an OOM is attributed to from the ablation reruns (``past``: ``activations``, ``gradients +
    optimizer state`` and ``both`` removed -> the rerun got past the phase of the OOM): each block whose removal
    alone gets the step past it; if neither alone does but both together do, all three; if even both together do
    not, the weights."""
    alone = frozenset(b for name in ABLATIONS if past.get(name) for b in name.split(" + "))
    if alone:
        return alone
    if past.get("both"):
        return frozenset({"activations"}) | GRAD_STATE
    return frozenset({"weights"})


def attribute_by_ablation(  # noqa: ANN001
    spec, *, cap_bytes: int, seq: int, failed_in: str, seed: int = 0
) -> tuple[frozenset[str], dict[str, str]]:
    """Rerun the step at ``cap_bytes`` with each block removed (and both, when neither alone gets past the phase
    ``failed_in``); returns the blocks of :func:`ablation_blocks` and where each rerun ran out ("fits" when not)."""
    from expkit.diagnose import diagnose_text

    def rerun(ablate: frozenset[str]) -> str:
        text = run_step_ablated(spec, cap_bytes=cap_bytes, seq=seq, ablate=ablate, seed=seed)
        oom = diagnose_text(text).explanation.oom if text else None
        return "fits" if text is None else ((oom.phase if oom else None) or "unknown phase")

    where = {name: rerun(frozenset(name.split(" + "))) for name in ABLATIONS}
    past = {name: got_past(None if w == "fits" else w, failed_in) for name, w in where.items()}
    if not any(past.values()):
        where["both"] = rerun(frozenset({"activations"}) | GRAD_STATE)
        past["both"] = got_past(None if where["both"] == "fits" else where["both"], failed_in)
    return ablation_blocks(past), where


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


@lab(id="C4.6", title="Attribute an OOM by when it happens", claims=("C4.6",), seed=(SEED,), rule_history=RULE_HISTORY)
def run(ctx: LabContext) -> LabOutput:
    from expkit.diagnose import diagnose_text
    from expkit.memory import TrainingQuery, estimate_training_memory
    from expkit.memory.capacity import run_step_capped
    from expkit.models.description import describe_config

    grid = 5 if ctx.quick else 10
    rows, lines, peaks, disagree = [], [], [], []
    for scenario, raw, seq in SCENARIOS:
        spec = describe_config(raw, name=f"qwen2-h{raw['hidden_size']}-L{raw['num_hidden_layers']}", source="lab C4.6")
        led = estimate_training_memory(TrainingQuery(spec, seq=seq, method="full", precision="fp32", device="cpu"))
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
            ablated, where = attribute_by_ablation(
                spec, cap_bytes=cap, seq=seq, failed_in=oom.phase or "unknown", seed=ctx.seed
            )
            demand = (oom.allocated_bytes or 0) + (oom.requested_bytes or 0)
            block, at = ledger_block(led, demand)
            near = ledger_blocks(led, demand)
            rows.append((oom.phase, bool(named & ablated), named == ablated, bool(named & near)))
            if not named & ablated:
                disagree.append(f"{scenario} at {cap / MIB:.1f} MiB, OOM in {oom.phase}")
            lines.append(
                f"{scenario}, {cap / MIB:.1f} MiB: OOM in {oom.phase}"
                + ("" if lora_oom is None else f" (LoRA rerun: {'still OOM' if lora_oom else 'fits'})")
                + f"; seed's rule -> {' + '.join(sorted(named)) or '-'}; ablation -> {' + '.join(sorted(ablated))} "
                + "("
                + ", ".join(f"without {k}: {'fits' if w == 'fits' else 'OOM in ' + w}" for k, w in where.items())
                + f"); allocated + requested {demand / MIB:.1f} MiB -> ledger: {block} ({at})"
                + (f", within +-{LEDGER_TOL:.0%}: {' or '.join(sorted(near))}" if len(near) > 1 else "")
            )
    agree = sum(r[1] for r in rows)
    phases = sorted({r[0] or "none" for r in rows})
    ms = [
        judged(
            "attribution",
            "OOMs where the seed's phase rule and the ablation name a common block",
            agree if rows else None,  # no OOM in the sweep: nothing attributed, so no 'every one of 0' verdict
            "OOMs",
            rule=KOfN(len(rows), len(rows), source="every OOM of the sweep"),
            seed=SEED,
            detail=f"{len(rows)} OOMs over {len(SCENARIOS)} x {grid} capacities (phases: {', '.join(phases)}); "
            + "; ".join(lines),
        ),
        Measurement(
            "attribution_exact",
            "OOMs where the two name exactly the same blocks",
            sum(r[2] for r in rows),
            "OOMs",
            detail="the ablation names all three blocks when only removing both gets the step past its OOM",
        ),
        Measurement(
            "ledger_agree",
            "OOMs where the allocation placed on the ledger's running total names a block of the seed's rule",
            sum(r[3] for r in rows),
            "OOMs",
            detail="not judged: the ledger placement names blocks by the same phase order as the seed's rule. Under "
            f"the rule as first stated (this count, every OOM) it would be "
            f"{KOfN(len(rows), len(rows)).judge(sum(r[3] for r in rows)).kind} (rule history)",
        ),
        Measurement(
            "ooms", "capacities that ran out of memory", len(rows), "OOMs", detail=f"of {len(SCENARIOS) * grid}"
        ),
        *(
            Measurement(f"{ph.replace(' ', '_')}_ooms", f"OOMs in {ph}", sum(r[0] == ph for r in rows), "OOMs")
            for ph in PHASE_ORDER
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
        "still OOM -> activations); (2) by ablation, the same step rerun at the same capacity with one block taken "
        f"out: {ABLATIONS['activations']}, or {ABLATIONS['gradients + optimizer state']}. A block is named when "
        "taking it out gets the step past the phase of the OOM (it fits, or runs out later); if neither alone does "
        "but both together do, all three; if nothing does, the weights. The ablation reads no phase-to-block map: "
        "it names the block whose removal cures the OOM. They name a common block on "
        f"{agree} of {len(rows)} OOMs (exactly the same blocks on {sum(r[2] for r in rows)})"
        + (
            f"; they disagree on {'; '.join(disagree)}: there the blocks the seed's rule names (as this lab reads "
            "it, a backward OOM is 'after the first backward') are not the ones whose removal cures the OOM. "
            if disagree
            else ". "
        )
        + "The allocation the "
        "message reports, placed on the ledger's running total (weights, + activations, + gradients, then optimizer "
        f"state, within +-{LEDGER_TOL:.0%}), agrees with the seed's rule on {sum(r[3] for r in rows)}; it is shown "
        "but not judged, as it names blocks by the same phase order as the seed's rule.\n\n" + "\n".join(lines)
    )
    return LabOutput(measurements=tuple(ms), explanation=explanation)
