"""Lab C4.5: autocast does not make the parameters bf16; it halves matmul intermediates."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED_DTYPES = SeedFigure("param_dtypes", "parameter dtypes inside autocast", None, "",
                         "autocast does not turn the parameters into bf16; the training state stays 16 B/param")
SEED_HALVES = SeedFigure("act_ratio", "matmul intermediates under autocast", None, "",
                         "autocast halves matmul intermediates")
TINY = dict(model_type="qwen2", hidden_size=256, intermediate_size=768, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=2000, tie_word_embeddings=True)


@lab(id="C4.5", title="autocast keeps fp32 parameters", claims=("C4.5",), seed=(SEED_DTYPES, SEED_HALVES))
def run(ctx: LabContext) -> LabOutput:
    import torch

    from expkit.memory.architecture import spec_from_dict
    from expkit.memory.replica import build_replica, measure_saved_bytes

    spec = spec_from_dict(TINY, name="tiny-qwen2", source="lab C4.5")
    model = build_replica(spec, precision="fp32", seed=ctx.seed)
    ids = torch.randint(0, spec.vocab_size, (1, 128))
    seen: dict[str, set[str]] = {"params": set(), "linear_out": set(), "grads": set()}
    hook = model.model.layers[0].mlp.up_proj.register_forward_hook(
        lambda m, a, out: seen["linear_out"].add(str(out.dtype).removeprefix("torch.")))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        seen["params"] |= {str(p.dtype).removeprefix("torch.") for p in model.parameters()}
        loss = model(input_ids=ids, labels=ids).loss
    hook.remove()
    loss.backward()
    seen["grads"] |= {str(p.grad.dtype).removeprefix("torch.") for p in model.parameters() if p.grad is not None}
    fp32 = measure_saved_bytes(model, batch=1, seq=128, precision="fp32").activation_bytes
    mixed = measure_saved_bytes(model, batch=1, seq=128, precision="bf16-mixed")
    ratio = mixed.activation_bytes / fp32
    ok = seen["params"] == {"float32"} and seen["grads"] == {"float32"} and seen["linear_out"] == {"bfloat16"}
    ms = (
        Measurement("param_dtypes", "parameter dtypes inside the autocast region", ", ".join(sorted(seen["params"])),
                    "", Verdict("reproduced") if ok else Verdict("not reproduced", str(seen)), SEED_DTYPES,
                    detail=f"gradients: {', '.join(sorted(seen['grads']))}; a linear's output: "
                           f"{', '.join(sorted(seen['linear_out']))}"),
        Measurement("act_ratio", "saved activations, autocast bf16 / fp32", ratio, "x",
                    Verdict("reproduced") if 0.45 <= ratio <= 0.8 else Verdict("differs", f"ratio {ratio:.2f}"),
                    SEED_HALVES, detail=f"{mixed.activation_bytes:,} B vs {fp32:,} B; plus {mixed.weight_copy_bytes:,} B "
                                        "of 16-bit weight copies"),
    )
    explanation = (
        "Inside torch.autocast every parameter is still float32 and so are the gradients that backward writes; "
        "only the outputs of matmul-class ops (here a linear layer's output) come out in bfloat16. So the "
        "training state stays 16 B/param (lab C4.1). What autocast halves is the activations of matmuls: the "
        f"tensors saved for backward shrink to {ratio:.2f} of fp32, not 0.5, because the residual stream, RMSNorm "
        "(upcast to fp32 in the HF code), the fp32 log-probs of the loss and a 16-bit cast per linear layer "
        "stay or are added; autocast also keeps 16-bit copies of the weights for backward."
    )
    return LabOutput(measurements=ms, explanation=explanation)
