"""Lab C3.2: gradients accumulate. k micro-batches equal one big batch; forgetting zero_grad grows the norm."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED_ACCUM = SeedFigure("accumulation", "accumulated micro-batches vs one big batch", None, "",
                        "not calling zero_grad is gradient accumulation: small batches simulate a large one")
SEED_BUG = SeedFigure("missing_zero_grad", "gradient norm without zero_grad", None, "",
                      "not calling zero_grad is a bug: gradients keep adding up")


@lab(id="C3.2", title="Gradients accumulate: accumulation vs a forgotten zero_grad", claims=("C3.2",),
     seed=(SEED_ACCUM, SEED_BUG))
def run(ctx: LabContext) -> LabOutput:
    from expkit.render.figures import new_figure, save_figure
    from expkit.train import CharLMConfig
    from expkit.train.probes import compare_accumulated_gradients, trace_grad_norm_growth

    cfg = CharLMConfig()
    k, micro, seq = (4, 2, 32) if ctx.quick else (8, 2, 64)
    steps = 5 if ctx.quick else 10
    acc = compare_accumulated_gradients(model_config=cfg, k=k, micro_batch=micro, seq_len=seq, seed=ctx.seed)
    bug = compare_accumulated_gradients(model_config=cfg, k=k, micro_batch=micro, seq_len=seq, seed=ctx.seed,
                                        divide_by_k=False)
    without = trace_grad_norm_growth(model_config=cfg, steps=steps, seq_len=seq, seed=ctx.seed, zero_grad=False)
    with_ = trace_grad_norm_growth(model_config=cfg, steps=steps, seq_len=seq, seed=ctx.seed, zero_grad=True)
    growth = without[-1] / without[0]

    fig, (ax,) = new_figure(1)
    ax.plot(range(1, steps + 1), with_, "C0o-", label="zero_grad(set_to_none=True) each step")
    ax.plot(range(1, steps + 1), without, "C3o-", label="zero_grad forgotten")
    ax.set(xlabel="backward passes", ylabel="gradient norm", title="Gradients add up until cleared")
    ax.legend()
    path = save_figure(fig, ctx.figure_path("c3_2_grad_norm.png"))
    measurements = (
        Measurement("accumulation", f"relative gradient difference, {k} x {micro} accumulated vs {k * micro} at once",
                    acc.rel_diff, "", Verdict("reproduced") if acc.within else
                    Verdict("not reproduced", f"over tolerance {acc.rel_tol:g}"), SEED_ACCUM,
                    detail=f"float32, tolerance {acc.rel_tol:g} (summation order only); max |diff| {acc.max_abs_diff:.2e}"),
        Measurement("accumulation_no_divide", "same, but each micro-batch loss not divided by k", bug.rel_diff, "",
                    detail=f"the classic bug: the gradient is k = {k} times too large (expected {k - 1})"),
        Measurement("missing_zero_grad", f"gradient norm after {steps} backward passes / after 1, zero_grad forgotten",
                    growth, "x", Verdict("reproduced") if growth > 2 else Verdict("not reproduced", "the norm did not grow"),
                    SEED_BUG, detail=f"with zero_grad: {with_[-1] / with_[0]:.2f}x"),
    )
    explanation = (
        f"Backward adds into .grad. Accumulating {k} micro-batches of {micro} sequences, each loss divided by {k}, "
        f"gives the gradient of one {k * micro}-sequence batch to {acc.rel_diff:.1e} relative (float32 summation "
        f"order); forgetting the division makes it {k}x too large. Without zero_grad the buffers keep the sum of "
        f"every earlier gradient: after {steps} backward passes the norm is {growth:.1f}x the first (random batches "
        "partly cancel, so it grows slower than linearly), while with zero_grad it stays flat. expkit's loop clears "
        "with set_to_none=True and its stale-gradient check flags parameters still holding gradient at a step start."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
