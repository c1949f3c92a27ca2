"""Lab C3.3: an eval without no_grad keeps every step's graph alive when the loss tensor is kept."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_EVAL = SeedFigure(
    "eval_memory_grows",
    "memory over eval steps without no_grad",
    None,
    "",
    "intermediates wait for a backward that never comes; memory grows until OOM",
)

MIB = 2**20
GROWS = Shown("intermediates kept for a backward that never comes grow with every eval step")


def grows_one_step_per_step(saved_bytes: tuple[int, ...]) -> bool:
    """Step ``i`` (from 1) holds ``i`` times the first step's saved bytes, within 1% of a step, and a step saved
    something: every step's graph is still alive."""
    per_step = saved_bytes[0]
    return per_step > 0 and all(abs(b - (i + 1) * per_step) <= 0.01 * per_step for i, b in enumerate(saved_bytes))


def stays_flat(saved_bytes: tuple[int, ...], per_step: int) -> bool:
    """The saved bytes move by at most 1% of ``per_step`` over the steps: no graph outlives its step."""
    return max(saved_bytes) - min(saved_bytes) <= 0.01 * per_step


@lab(id="C3.3", title="Evaluation needs no_grad", claims=("C3.3",), seed=(SEED_EVAL,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.render.figures import new_figure, save_figure
    from expkit.train import CharLMConfig
    from expkit.train.probes import measure_eval_memory

    cfg = CharLMConfig()
    steps = 6 if ctx.quick else 20
    traces = {
        m: measure_eval_memory(model_config=cfg, mode=m, steps=steps, batch_size=8, seq_len=128, seed=ctx.seed)
        for m in ("no_grad", "grad_item", "grad_keep_loss")
    }
    kept = traces["grad_keep_loss"].saved_bytes
    item = traces["grad_item"].saved_bytes
    nograd = traces["no_grad"].saved_bytes
    per_step = kept[0]
    linear = grows_one_step_per_step(kept)
    flat = max(nograd) == 0 and stays_flat(item, per_step)

    fig, (ax,) = new_figure(1)
    labels = {
        "no_grad": "torch.no_grad()",
        "grad_item": "no no_grad, total += loss.item()",
        "grad_keep_loss": "no no_grad, total += loss",
    }
    for m, t in traces.items():
        ax.plot(range(1, steps + 1), [b / MIB for b in t.saved_bytes], "o-", label=labels[m])
    ax.set(
        xlabel="eval steps (batch 8 x 128)",
        ylabel="saved-for-backward tensors alive (MiB)",
        title="Eval memory with and without no_grad",
    )
    ax.legend()
    path = save_figure(fig, ctx.figure_path("c3_3_eval_memory.png"))
    rss = traces["grad_keep_loss"].rss_bytes
    measurements = (
        judged(
            "eval_memory_grows",
            "without no_grad, memory kept grows one step's activations per step; under no_grad nothing is kept",
            linear and flat,
            "",
            rule=GROWS,
            seed=SEED_EVAL,
            detail=f"{per_step / MIB:.1f} MiB per step, within 1% of linear: "
            f"{'yes' if linear else 'no'}; no_grad and .item() flat: {'yes' if flat else 'no'}; process RSS grew "
            f"{(rss[-1] - rss[0]) / MIB:.0f} MiB; no OOM is provoked here",
        ),
        Measurement(
            "eval_memory",
            f"memory kept after {steps} eval steps without no_grad (loss tensor summed)",
            kept[-1] / MIB,
            "MiB",
        ),
        Measurement("eval_memory_no_grad", "same under torch.no_grad()", nograd[-1] / MIB, "MiB"),
        Measurement(
            "eval_memory_item",
            "without no_grad, loss read with .item()",
            item[-1] / MIB,
            "MiB",
            detail="flat, but every step still saves one step's activations",
        ),
    )
    explanation = (
        f"Each eval forward of the char LM (batch 8 x 128) saves {per_step / MIB:.1f} MiB of activations for "
        "backward, counted with a saved_tensors hook, each storage once (q, k and v are views of one qkv output; "
        "parameters excluded). Under torch.no_grad() "
        f"{max(nograd) / MIB:.1f} MiB was saved. Without it, summing the loss tensor (total += loss) chains every "
        f"step's graph to `total`: {kept[-1] / MIB:.0f} MiB after {steps} steps, "
        f"{'growing linearly, so a long enough eval ends in OOM (not provoked here)' if linear else 'not linear'}. "
        "Reading the loss with .item() frees each graph when the next step rebinds `loss`: "
        + (
            f"flat at {item[-1] / MIB:.1f} MiB, but every step still pays for saving activations. "
            if flat
            else f"not flat here ({min(item) / MIB:.1f} to {max(item) / MIB:.1f} MiB). "
        )
        + "expkit's estimate_val_loss runs under @torch.no_grad()."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
