"""Lab C4.6: attribute an OOM by when it happens; three real OOMs (simulated capacity on the CPU) read by
expkit why's parser and reconciled with the ledger."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED = SeedFigure("attribution", "OOM attributed by its phase", None, "",
                  "right after load -> weights; after the first backward -> gradients + optimizer state; "
                  "still OOM with LoRA -> activations")
MIB = 2**20
BIG = dict(model_type="qwen2", hidden_size=512, intermediate_size=1376, num_hidden_layers=2, num_attention_heads=8,
           num_key_value_heads=2, vocab_size=8000, tie_word_embeddings=True)
LONG = dict(model_type="qwen2", hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=4000, tie_word_embeddings=True)
# (name, config, method, seq, capacity, the block the seed's rule names)
SCENARIOS = (
    ("weights", BIG, "full", 32, 20 * MIB, "weights"),
    ("optimizer state", BIG, "full", 32, 130 * MIB, "optimizer state"),
    ("activations", LONG, "lora", 2048, 60 * MIB, "activations"),
)


@lab(id="C4.6", title="Attribute an OOM by when it happens", claims=("C4.6",), seed=(SEED,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.diagnose import diagnose_text
    from expkit.memory import attribute_oom, estimate_training_memory
    from expkit.memory.architecture import spec_from_dict
    from expkit.memory.capacity import run_step_capped

    ms, lines, hits = [], [], 0
    for name, raw, method, seq, cap, expected in SCENARIOS:
        spec = spec_from_dict(raw, name=f"qwen2-h{raw['hidden_size']}-L{raw['num_hidden_layers']}", source="lab C4.6")
        text = run_step_capped(spec, cap_bytes=cap, seq=seq, method=method, seed=ctx.seed)
        led = estimate_training_memory(spec, seq=seq, method=method, precision="fp32", device="cpu")
        oom = diagnose_text(text).explanation.oom if text else None
        if oom is None:
            ms.append(Measurement(name, f"{spec.name} {method} seq {seq}, {cap // MIB} MiB", "no OOM", "",
                                  Verdict("not reproduced", "the step fitted"), SEED))
            continue
        ex = attribute_oom(led, model=spec, phase=oom.phase, capacity_bytes=oom.capacity_bytes,
                           requested_bytes=oom.requested_bytes, allocated_bytes=oom.allocated_bytes)
        ok = ex.block == expected and ex.consistent is True
        hits += ok
        top = ex.remedies[0] if ex.remedies else None
        ms.append(Measurement(
            name, f"{spec.name} {method}, seq {seq}, on {cap // MIB} MiB: block", ex.block, "",
            Verdict("reproduced") if ok else Verdict("not reproduced", ex.reason), SEED,
            detail=f"phase from the traceback: {oom.phase} ({oom.phase_reason.rsplit('/', 1)[-1]}); {ex.reason}; "
                   "top remedy: " + (f"{top.name} saves {top.savings_bytes / MIB:.0f} MiB" if top else "-")))
        lines.append(f"{name}: {ex.reason}")
    explanation = (
        f"Three training runs on a device capacity simulated on the CPU (every tensor's storage counted; the "
        f"allocation past the cap raises torch.OutOfMemoryError in CUDA's format), so the tracebacks carry the real "
        f"frames of the call that failed. expkit why's parser reads the phase from them and the ledger of the same "
        f"run names the block: {hits} of {len(SCENARIOS)} as the seed's rule says. "
        + ("Loading a model larger than the device fails "
           "in Module.to_empty: weights. A full fine-tune whose weights, activations and gradients fit fails in the "
           "first optimizer.step(), when AdamW creates its two fp32 moments. A LoRA run at 2,048 tokens, with its "
           "training state down to the adapters, still fails in the forward pass: activations (the top remedy is in "
           "its row)." if hits == len(SCENARIOS) else
           "The rows name the scenarios the rule did not attribute as expected.")
        + "\n\n" + "\n".join(lines)
    )
    return LabOutput(measurements=tuple(ms), explanation=explanation)
