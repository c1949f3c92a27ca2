"""Lab C5.2 + C5.4: the numbers in config.json are the architecture; LoRA's parameter and state accounting;
and a training step run under a memory cap where the full fine-tune runs out of memory and LoRA fits."""

from __future__ import annotations

from dataclasses import dataclass

from expkit.labs.base import KOfN, LabContext, LabOutput, Measurement, SeedFigure, Shown, Within, judged, not_measured
from expkit.labs.registry import lab

SEED_ARCH = SeedFigure(
    "arch", "Qwen2.5-0.5B architecture", None, "", "24 layers, hidden 896, vocab 151936, tied embeddings"
)
SEED_TOTAL = SeedFigure("total_params", "Qwen2.5-0.5B parameters", 494e6, "params", "494M parameters")
SEED_TRAINABLE = SeedFigure("trainable", "trainable with LoRA r = 16", 8.80e6, "params", "8.80M trainable")
SEED_FRACTION = SeedFigure("fraction", "trainable share", 1.78, "%", "1.78%")
SEED_STATE = SeedFigure("state", "LoRA training state", 141e6, "bytes", "training state 141 MB")
SEED_POSSIBLE = SeedFigure(
    "lora_fits_full_does_not", "LoRA makes a fine-tune possible", None, "", "LoRA makes a CPU fine-tune possible"
)
ROUNDING = "half a unit of the seed's last printed digit"
TOTAL_RULE = Within(494e6, abs=0.5e6, source=ROUNDING)
# a tiny model, untied (run_step_capped's meta-device load unties embeddings), for the capped steps
TINY = dict(
    model_type="qwen2",
    hidden_size=512,
    intermediate_size=1376,
    num_hidden_layers=2,
    num_attention_heads=8,
    num_key_value_heads=2,
    vocab_size=8000,
    tie_word_embeddings=False,
)
TINY_SEQ = 64
POSSIBLE = Shown("under one memory cap a full fine-tune step runs out of memory and a LoRA step of the same model fits")


@dataclass(frozen=True)
class CappedSteps:
    """One fp32 AdamW step of the tiny model, full and LoRA, under one simulated memory cap: whether each ran out
    of memory (None: the step could not be run) and the ledger's predicted peaks the cap was placed by."""

    full_oom: bool | None
    lora_oom: bool | None
    cap_bytes: int
    full_peak_bytes: int
    lora_peak_bytes: int

    @property
    def possible(self) -> bool:
        """The claim's shape: the full step ran out of memory and the LoRA step fitted."""
        return self.full_oom is True and self.lora_oom is False


def run_full_vs_lora_capped(seed: int, *, cap_bytes: int | None = None) -> CappedSteps:
    """One fp32 AdamW step of a tiny model, full and LoRA, under a simulated cap; by default halfway (geometric
    mean) between the ledger's two predicted peaks, else ``cap_bytes``."""
    from expkit.memory import TrainingQuery, estimate_training_memory
    from expkit.memory.capacity import run_step_capped
    from expkit.models.description import describe_config

    spec = describe_config(TINY, name="qwen2-h512-L2", source="lab C5.2")
    full, lora = (
        estimate_training_memory(
            TrainingQuery(spec, seq=TINY_SEQ, method=method, precision="fp32", device="cpu")
        ).peak_bytes
        for method in ("full", "lora")
    )
    cap = int((full * lora) ** 0.5) if cap_bytes is None else cap_bytes
    full_oom = run_step_capped(spec, cap_bytes=cap, seq=TINY_SEQ, method="full", seed=seed) is not None
    lora_oom = run_step_capped(spec, cap_bytes=cap, seq=TINY_SEQ, method="lora", seed=seed) is not None
    return CappedSteps(full_oom, lora_oom, cap, full, lora)


@lab(
    id="C5.2",
    title="config.json is the architecture; LoRA's 1.78% and 141 MB",
    claims=("C5.2", "C5.4"),
    seed=(SEED_ARCH, SEED_TOTAL, SEED_TRAINABLE, SEED_FRACTION, SEED_STATE),
)
def run(ctx: LabContext) -> LabOutput:
    import warnings

    from expkit.memory import count_parameters, load_model_description
    from expkit.models.counting import build_meta_model

    spec = load_model_description("qwen2.5-0.5b")
    ((layer, _),) = spec.layer_groups()  # Qwen2.5: every layer alike
    full = count_parameters(spec)
    lora = count_parameters(spec, lora_r=16)
    # the same config instantiated under accelerate's init_empty_weights(): the tie is lost
    from accelerate import init_empty_weights

    model = build_meta_model(spec)  # keeps the tie
    if model is None:
        raise RuntimeError(
            f"transformers has no model class for {spec.name}; this lab needs one (upgrade transformers)"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from transformers import AutoModelForCausalLM

        with init_empty_weights():
            untied = AutoModelForCausalLM.from_config(model.config)
    untied_count = sum(p.numel() for p in untied.parameters())
    tied_now = model.lm_head.weight is model.model.embed_tokens.weight
    arch = (spec.num_layers, spec.hidden_size, spec.vocab_size, full.tied_embeddings)
    arch_hits = sum(a == b for a, b in zip(arch, (24, 896, 151936, True), strict=True))
    capped = run_full_vs_lora_capped(ctx.seed)
    full_oom, lora_oom, cap = capped.full_oom, capped.lora_oom, capped.cap_bytes
    full_peak, lora_peak, possible = capped.full_peak_bytes, capped.lora_peak_bytes, capped.possible
    # the five counts are arithmetic on config.json's numbers (a meta-device model, peft's formula, 16 B per
    # parameter): computed, not measured on this machine (issue 36); the capped step below was run
    counts = (
        judged(
            "arch",
            "of layers 24, hidden 896, vocab 151936, tied: values the meta-device model has",
            arch_hits,
            "of 4",
            rule=KOfN(4, 4),
            seed=SEED_ARCH,
            detail=f"{spec.num_layers}, {spec.hidden_size}, {spec.vocab_size}, "
            f"{'tied' if full.tied_embeddings else 'untied'}; heads {layer.attention.num_heads}, "
            f"kv heads {layer.attention.num_kv_heads} (GQA), head_dim {layer.attention.head_dim}, "
            f"intermediate {layer.mlp.intermediate_size}",
        ),
        judged(
            "total_params",
            "parameters, meta-device instantiation",
            full.total_params,
            "params",
            rule=TOTAL_RULE,
            seed=SEED_TOTAL,
            detail=f"embedding {full.embedding_params:,} (shared with the LM head), "
            f"{full.per_layer_params:,} per layer",
        ),
        judged(
            "trainable",
            "trainable with LoRA r = 16, all linear layers (peft)",
            lora.trainable_params,
            "params",
            rule=Within(8.80e6, abs=0.005e6, source=ROUNDING),
            seed=SEED_TRAINABLE,
            detail="24 layers x 16 x (q 1792 + k 1024 + v 1024 + o 1792 + 3 x 5760)",
        ),
        judged(
            "fraction",
            "trainable / base parameters",
            100 * lora.trainable_fraction,
            "%",
            rule=Within(1.78, abs=0.005, source=ROUNDING),
            seed=SEED_FRACTION,
            detail=f"peft's print_trainable_parameters divides by base + adapters: "
            f"{100 * lora.trainable_fraction_of_all:.2f}%",
        ),
        judged(
            "state",
            "training state: 16 B per trainable parameter",
            lora.training_state_bytes,
            "bytes",
            rule=Within(141e6, abs=0.5e6, source=ROUNDING),
            seed=SEED_STATE,
            detail="fp32 master 4 + grad 4 + Adam m 4 + v 4; the frozen 16-bit base adds "
            f"{2 * full.total_params / 1e9:.2f} GB",
        ),
    )
    ms = (
        *(not_measured(m, "computed") for m in counts),
        Measurement(
            "untied",
            "same config under accelerate's init_empty_weights()",
            untied_count,
            "params",
            detail=f"the tie is lost there (lm_head counted again); torch.device('meta') keeps it: tied = {tied_now}",
            provenance="computed",  # a count on meta tensors, like the five above
        ),
        judged(
            "lora_fits_full_does_not",
            "under one memory cap: full step OOM, LoRA step fits (tiny model, run)",
            possible,
            "",
            rule=POSSIBLE,
            seed=SEED_POSSIBLE,
            detail=f"{TINY['hidden_size']}-wide 2-layer Qwen2, {TINY_SEQ} tokens, fp32 AdamW, cap "
            f"{cap / 2**20:.1f} MiB (between the ledger's peaks: full {full_peak / 2**20:.1f}, LoRA "
            f"{lora_peak / 2**20:.1f} MiB): full {'OOM' if full_oom else 'fitted'}, LoRA "
            f"{'OOM' if lora_oom else 'fitted'}",
        ),
    )
    explanation = (
        f"Qwen2.5-0.5B's config.json values (24 layers, hidden 896, 14 heads with 2 KV heads, intermediate 4864, "
        f"vocab 151,936, tied embeddings) instantiated on the meta device give exactly {full.total_params:,} "
        f"parameters, no weights downloaded; {100 * full.embedding_params / full.total_params:.0f}% of them are the "
        f"embedding. peft's LoRA at r = 16 on every linear layer adds {lora.trainable_params:,} trainable "
        f"parameters: {100 * lora.trainable_fraction:.2f}% of the base, or {100 * lora.trainable_fraction_of_all:.2f}% "
        "of base + adapters (the figure peft prints), so the seed's 1.78% is of the base. At 16 B per trainable "
        f"parameter the training state is {lora.training_state_bytes / 1e6:.1f} MB (10^6 B). Counting under "
        f"accelerate's init_empty_weights() unties the embedding and reports {untied_count / 1e6:.0f}M.\n\n"
        f"That LoRA makes a fine-tune possible where a full one is not was run, on a tiny model: under a simulated "
        f"memory cap of {cap / 2**20:.1f} MiB a full fp32 AdamW step ran {'out of memory' if full_oom else 'through'} "
        f"and a LoRA step of the same model {'fitted' if not lora_oom else 'ran out of memory too'}. Whether it "
        "decides a CPU fine-tune of Qwen2.5-0.5B depends on the machine's memory: the full step's training state "
        f"alone is {16 * full.total_params / 1e9:.1f} GB (16 B/param), the LoRA step's "
        f"{lora.training_state_bytes / 1e6:.0f} MB plus the frozen base."
    )
    return LabOutput(measurements=ms, explanation=explanation)
