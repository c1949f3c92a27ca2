"""Lab C3.2: gradients accumulate. k micro-batches equal one big batch; forgetting zero_grad grows the norm."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_ACCUM = SeedFigure(
    "accumulation",
    "accumulated micro-batches vs one big batch",
    None,
    "",
    "not calling zero_grad is gradient accumulation: small batches simulate a large one",
)
SEED_BUG = SeedFigure(
    "missing_zero_grad",
    "gradient norm without zero_grad",
    None,
    "",
    "not calling zero_grad is a bug: gradients keep adding up",
)


@lab(
    id="C3.2",
    title="Gradients accumulate: accumulation vs a forgotten zero_grad",
    claims=("C3.2",),
    seed=(SEED_ACCUM, SEED_BUG),
)
def run(ctx: LabContext) -> LabOutput:
    from expkit.render.figures import new_figure, save_figure
    from expkit.train import CharLMConfig
    from expkit.train.probes import compare_accumulated_gradients, trace_grad_norm_growth

    cfg = CharLMConfig()
    k, micro, seq = (4, 2, 32) if ctx.quick else (8, 2, 64)
    steps = 5 if ctx.quick else 10
    acc = compare_accumulated_gradients(model_config=cfg, k=k, micro_batch=micro, seq_len=seq, seed=ctx.seed)
    bug = compare_accumulated_gradients(
        model_config=cfg, k=k, micro_batch=micro, seq_len=seq, seed=ctx.seed, divide_by_k=False
    )
    without = trace_grad_norm_growth(model_config=cfg, steps=steps, seq_len=seq, seed=ctx.seed, zero_grad=False)
    with_ = trace_grad_norm_growth(model_config=cfg, steps=steps, seq_len=seq, seed=ctx.seed, zero_grad=True)
    growth = without[-1] / without[0]

    fig, (ax,) = new_figure(1)
    ax.plot(range(1, steps + 1), with_, "C0o-", label="zero_grad(set_to_none=True) each step")
    ax.plot(range(1, steps + 1), without, "C3o-", label="zero_grad forgotten")
    ax.set(xlabel="backward passes", ylabel="gradient norm", title="Gradients add up until cleared")
    ax.legend()
    path = save_figure(fig, ctx.figure_path("c3_2_grad_norm.png"))
    # the norm's step-to-step spread with zero_grad (independent batches) is what "grew" must clear
    spread = max(with_) / min(with_)
    grew = growth > spread
    measurements = (
        judged(
            "accumulation",
            f"{k} x {micro} accumulated gives the gradient of {k * micro} at once",
            acc.within,
            "",
            rule=Shown(f"accumulated micro-batches match one big batch to {acc.rel_tol:g} relative"),
            seed=SEED_ACCUM,
            detail=f"relative difference {acc.rel_diff:.2e} against {acc.rel_tol:g} (float32 "
            f"summation order only); max |diff| {acc.max_abs_diff:.2e}",
        ),
        Measurement("accumulation_rel_diff", "relative gradient difference, accumulated vs at once", acc.rel_diff, ""),
        Measurement(
            "accumulation_no_divide",
            "same, but each micro-batch loss not divided by k",
            bug.rel_diff,
            "",
            detail=f"the classic bug: the gradient is k = {k} times too large (expected {k - 1})",
        ),
        judged(
            "missing_zero_grad",
            f"gradient norm grew over {steps} backward passes without zero_grad",
            grew,
            "",
            rule=Shown("without zero_grad the gradient keeps adding up"),
            seed=SEED_BUG,
            detail=f"after {steps} / after 1: {growth:.2f}x without zero_grad; with it the norm moved within "
            f"{spread:.2f}x (largest / smallest), the bar to clear",
        ),
        Measurement(
            "grad_norm_growth",
            f"gradient norm after {steps} backward passes / after 1, zero_grad forgotten",
            growth,
            "x",
        ),
    )
    explanation = (
        f"Backward adds into .grad. Accumulating {k} micro-batches of {micro} sequences, each loss divided by {k}, "
        f"gives the gradient of one {k * micro}-sequence batch to {acc.rel_diff:.1e} relative "
        f"({'within' if acc.within else 'over'} the {acc.rel_tol:g} float32 summation order allows); forgetting the "
        f"division made it {1 + bug.rel_diff:.2f}x too large (k = {k}). Without zero_grad the buffers keep the sum of "
        f"every earlier gradient: after {steps} backward passes the norm is {growth:.1f}x the first"
        + (f" (under {steps}x: the batches' gradients partly cancel)" if growth < steps else "")
        + f", while with zero_grad it moved within {spread:.2f}x. expkit's loop clears "
        "with set_to_none=True and its stale-gradient check flags parameters still holding gradient at a step start."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
