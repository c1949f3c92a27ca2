"""Lab C5.2 + C5.4: the numbers in config.json are the architecture; LoRA's parameter and state accounting."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict, verdict_within
from expkit.labs.registry import lab

SEED_ARCH = SeedFigure("arch", "Qwen2.5-0.5B architecture", None, "",
                       "24 layers, hidden 896, vocab 151936, tied embeddings")
SEED_TOTAL = SeedFigure("total_params", "Qwen2.5-0.5B parameters", 494e6, "params", "494M parameters")
SEED_TRAINABLE = SeedFigure("trainable", "trainable with LoRA r = 16", 8.80e6, "params", "8.80M trainable")
SEED_FRACTION = SeedFigure("fraction", "trainable share", 1.78, "%", "1.78%")
SEED_STATE = SeedFigure("state", "LoRA training state", 141e6, "bytes", "training state 141 MB")


@lab(id="C5.2", title="config.json is the architecture; LoRA's 1.78% and 141 MB", claims=("C5.2", "C5.4"),
     seed=(SEED_ARCH, SEED_TOTAL, SEED_TRAINABLE, SEED_FRACTION, SEED_STATE))
def run(ctx: LabContext) -> LabOutput:
    import warnings

    from expkit.memory import count_parameters, load_model_spec
    from expkit.memory.params import build_meta_model

    spec = load_model_spec("qwen2.5-0.5b")
    full = count_parameters(spec)
    lora = count_parameters(spec, lora_r=16)
    arch_ok = (spec.num_layers, spec.hidden_size, spec.vocab_size, full.tied_embeddings) == (24, 896, 151936, True)
    # the same config instantiated under accelerate's init_empty_weights(): the tie is lost
    from accelerate import init_empty_weights

    model = build_meta_model(spec)  # keeps the tie
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from transformers import AutoModelForCausalLM

        with init_empty_weights():
            untied = AutoModelForCausalLM.from_config(model.config)
    untied_count = sum(p.numel() for p in untied.parameters())
    tied_now = model.lm_head.weight is model.model.embed_tokens.weight
    ms = (
        Measurement("arch", "layers, hidden, vocab, tied (read from the shipped config.json values)",
                    f"{spec.num_layers}, {spec.hidden_size}, {spec.vocab_size}, {'tied' if full.tied_embeddings else 'untied'}",
                    "", Verdict("reproduced") if arch_ok else Verdict("not reproduced"), SEED_ARCH,
                    detail=f"heads {spec.num_heads}, kv heads {spec.num_kv_heads} (GQA), head_dim {spec.head_dim}, "
                           f"intermediate {spec.intermediate_size}"),
        Measurement("total_params", "parameters, meta-device instantiation", full.total_params, "params",
                    verdict_within(full.total_params, SEED_TOTAL.value, rel_tol=0.005), SEED_TOTAL,
                    detail=f"embedding {full.embedding_params:,} (shared with the LM head), "
                           f"{full.per_layer_params:,} per layer"),
        Measurement("trainable", "trainable with LoRA r = 16, all linear layers (peft)", lora.trainable_params,
                    "params", verdict_within(lora.trainable_params, SEED_TRAINABLE.value, rel_tol=0.005),
                    SEED_TRAINABLE, detail="24 layers x 16 x (q 1792 + k 1024 + v 1024 + o 1792 + 3 x 5760)"),
        Measurement("fraction", "trainable / base parameters", 100 * lora.trainable_fraction, "%",
                    verdict_within(100 * lora.trainable_fraction, SEED_FRACTION.value, abs_tol=0.005), SEED_FRACTION,
                    detail=f"peft's print_trainable_parameters divides by base + adapters: "
                           f"{100 * lora.trainable_fraction_of_all:.2f}%"),
        Measurement("state", "training state: 16 B per trainable parameter", lora.training_state_bytes, "bytes",
                    verdict_within(lora.training_state_bytes, SEED_STATE.value, rel_tol=0.005), SEED_STATE,
                    detail="fp32 master 4 + grad 4 + Adam m 4 + v 4; the frozen 16-bit base adds "
                           f"{2 * full.total_params / 1e9:.2f} GB"),
        Measurement("untied", "same config under accelerate's init_empty_weights()", untied_count, "params",
                    detail=f"the tie is lost there (lm_head counted again); torch.device('meta') keeps it: "
                           f"tied = {tied_now}"),
    )
    explanation = (
        f"Qwen2.5-0.5B's config.json values (24 layers, hidden 896, 14 heads with 2 KV heads, intermediate 4864, "
        f"vocab 151,936, tied embeddings) instantiated on the meta device give exactly {full.total_params:,} "
        f"parameters, no weights downloaded; {100 * full.embedding_params / full.total_params:.0f}% of them are the "
        f"embedding. peft's LoRA at r = 16 on every linear layer adds {lora.trainable_params:,} trainable "
        f"parameters: {100 * lora.trainable_fraction:.2f}% of the base, or {100 * lora.trainable_fraction_of_all:.2f}% "
        "of base + adapters (the figure peft prints), so the seed's 1.78% is of the base. At 16 B per trainable "
        f"parameter the training state is {lora.training_state_bytes / 1e6:.1f} MB (10^6 B). Counting under "
        f"accelerate's init_empty_weights() unties the embedding and reports {untied_count / 1e6:.0f}M."
    )
    return LabOutput(measurements=ms, explanation=explanation)
