"""Lab C4.4: full fine-tune or LoRA is first decided by how many GPUs you have (ledger: GPUs needed)."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged, not_measured
from expkit.labs.registry import lab

SEED = SeedFigure(
    "decision",
    "full fine-tune or LoRA",
    None,
    "",
    "'Full fine-tune or LoRA' is first decided by how many GPUs you have",
)
MODELS = ("qwen2.5-0.5b", "qwen2.5-7b", "qwen2.5-72b")
GPUS = ("4090", "a100-40gb", "a100-80gb")
METHODS = ("full", "lora", "qlora")
COUNTS = (1, 2, 4, 8, 16, 32, 64)
SEQ = 2048
DECIDED = Shown("on one 24 GB GPU the GPU count decides: Qwen2.5-7B full needs more than one, LoRA fits one")


def gpus_needed(model: str, method: str, gpu: str) -> int | None:
    """Smallest GPU count (FSDP when > 1) whose predicted peak per GPU fits, at seq 2048 with
    checkpointing; None beyond 64."""
    from expkit.memory import TrainingQuery, estimate_training_memory, load_model_description

    desc = load_model_description(model)
    for n in COUNTS:
        shard = "fsdp" if n > 1 else "none"
        query = TrainingQuery(desc, seq=SEQ, method=method, grad_ckpt="full", gpus=n, shard=shard, gpu=gpu)
        led = estimate_training_memory(query)
        if led.fits:
            return n
    return None


@lab(id="C4.4", title="GPUs needed: full vs LoRA vs QLoRA", claims=("C4.4",), seed=(SEED,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.perf.hardware import get_gpu
    from expkit.render.figures import new_figure, save_figure

    table = {(m, meth, g): gpus_needed(m, meth, g) for m in MODELS for meth in METHODS for g in GPUS}
    full7_24, lora7_24 = table[("qwen2.5-7b", "full", "4090")], table[("qwen2.5-7b", "lora", "4090")]
    decided = full7_24 is not None and lora7_24 == 1 and full7_24 > 1
    ms = [
        not_measured(
            judged(
                "decision",
                "Qwen2.5-7B on 24 GB GPUs: full needs more GPUs than LoRA, and LoRA fits one",
                decided,
                "",
                rule=DECIDED,
                seed=SEED,
                detail=f"full needs {full7_24 or '>64'}, LoRA {lora7_24 or '>64'} GPUs of 24 GB (predicted peak per "
                f"GPU within the datasheet memory); seq {SEQ}, batch 1, checkpointing, bf16 autocast, AdamW, "
                "FSDP when > 1 GPU",
            ),
            "computed",
        )
    ]
    for m in MODELS:
        for meth in METHODS:
            cells = ", ".join(f"{get_gpu(g).memory_gb:.0f} GB: {table[(m, meth, g)] or '>64'}" for g in GPUS)
            ms.append(Measurement(f"{m}_{meth}", f"{m} {meth}", cells, "GPUs", provenance="computed"))  # the ledger
    fig, axes = new_figure(len(MODELS), width_in=3.6)
    for ax, m in zip(axes, MODELS, strict=True):
        grid = [[table[(m, meth, g)] or 128 for g in GPUS] for meth in METHODS]
        ax.imshow([[v.bit_length() for v in row] for row in grid], cmap="Oranges", vmin=0, vmax=8)
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                ax.text(j, i, ">64" if v == 128 else str(v), ha="center", va="center")
        ax.set_xticks(range(len(GPUS)), [f"{get_gpu(g).memory_gb:.0f} GB" for g in GPUS])
        ax.set_yticks(range(len(METHODS)), METHODS)
        ax.set_title(m)
    path = save_figure(fig, ctx.figure_path("c4_4_gpus_needed.png"))
    f72 = table[("qwen2.5-72b", "full", "a100-80gb")]
    explanation = (
        f"GPUs needed (predicted peak per GPU within the datasheet memory; seq {SEQ}, checkpointing, bf16 "
        f"autocast, AdamW; FSDP shards everything when > 1). Qwen2.5-7B: a full fine-tune needs {full7_24} GPUs "
        f"of 24 GB, LoRA {lora7_24}, so with one consumer GPU the method is decided before any quality question. "
        f"Qwen2.5-72B full needs {f72 or '>64'} x 80 GB; QLoRA brings it to "
        f"{table[('qwen2.5-72b', 'qlora', 'a100-80gb')] or '>64'}. Qwen2.5-0.5B fits one GPU every way. These "
        "are ledger predictions (checked against measured steps on small configs by lab C4.2v), not runs on GPUs."
    )
    return LabOutput(measurements=tuple(ms), explanation=explanation, figures=(path,))
