"""Lab C2.4: a handwritten operator is right when it matches the reference to floating-point precision:
numpy causal attention vs ``torch.nn.functional.scaled_dot_product_attention``."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED_F32 = SeedFigure("max_err_float32", "numpy attention vs SDPA, max abs error", 2.65e-7, "",
                      "max error 2.65e-7; 'correct' means ~1e-6 in float32")
SEED_F64 = SeedFigure("max_err_float64", "the same in float64", 1e-12, "", "'correct' means ~1e-12 in float64")
SHAPES_QUICK = ((2, 4, 64, 32), (1, 8, 128, 64))
SHAPES_FULL = ((2, 4, 64, 32), (1, 8, 128, 64), (4, 8, 256, 64), (1, 12, 512, 64))


def _naive_attention(q, k, v):  # noqa: ANN001, ANN202 - the bug: softmax without subtracting the max
    import numpy as np

    t = q.shape[-2]
    s = (q @ np.swapaxes(k, -1, -2)) / q.dtype.type(np.sqrt(q.shape[-1]))
    s = np.where(np.triu(np.ones((t, t), dtype=bool), 1), -np.inf, s)
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow is the point of this function
        e = np.exp(s)
        return (e / e.sum(-1, keepdims=True)) @ v


@lab(id="C2.4", title="Check an operator against the reference", claims=("C2.4",), seed=(SEED_F32, SEED_F64))
def run(ctx: LabContext) -> LabOutput:
    import numpy as np
    import torch

    from expkit.check import causal_attention, check_attention, compare, default_tolerance, sdpa_causal
    from expkit.render.figures import new_figure, save_figure

    shapes = SHAPES_QUICK if ctx.quick else SHAPES_FULL
    errs: dict[str, list[float]] = {"float32": [], "float64": []}
    oks: dict[str, bool] = {"float32": True, "float64": True}
    for shape in shapes:
        for dtype in errs:
            rep = check_attention(shape=shape, dtype=dtype, seed=ctx.seed)
            errs[dtype].append(rep.max_abs_error)
            oks[dtype] &= rep.ok
    e32, e64 = max(errs["float32"]), max(errs["float64"])
    rtol32, atol32 = default_tolerance("float32")
    rtol64, atol64 = default_tolerance("float64")

    # the classic bug: softmax without the max subtracted overflows once logits pass ~88 in float32
    rng = np.random.default_rng(ctx.seed)
    q = (rng.standard_normal((1, 1, 16, 64)) * 6.0).astype(np.float32)  # logits of a few hundred
    naive = compare(_naive_attention(q, q, q), sdpa_causal(*(torch.from_numpy(q),) * 3))
    safe = compare(causal_attention(q, q, q), sdpa_causal(*(torch.from_numpy(q),) * 3))

    fig, (ax,) = new_figure(1)
    labels = ["x".join(map(str, s)) for s in shapes]
    xs = np.arange(len(shapes))
    ax.bar(xs - 0.2, errs["float32"], 0.4, label="float32")
    ax.bar(xs + 0.2, errs["float64"], 0.4, label="float64")
    ax.axhline(SEED_F32.value, color="C3", lw=0.8, ls="--", label="seed: 2.65e-7")
    ax.axhline(atol32, color="C0", lw=0.6, ls=":", label="float32 atol 1e-6")
    ax.axhline(atol64, color="C1", lw=0.6, ls=":", label="float64 atol 1e-12")
    ax.set(yscale="log", xticks=xs, ylabel="max |numpy - SDPA|", xlabel="B x H x T x D",
           title="numpy causal attention vs torch SDPA")
    ax.set_xticklabels(labels, fontsize=8)
    ax.legend(fontsize=7)
    path = save_figure(fig, ctx.figure_path("c2_4_attention_error.png"))

    # same order of magnitude as the seed (within 10x) and within the float32 tolerance
    v32 = (Verdict("reproduced") if oks["float32"] and SEED_F32.value / 10 <= e32 <= SEED_F32.value * 10
           else Verdict("differs", f"max error {e32:.3g}; shapes and BLAS differ from the seed's") if oks["float32"]
           else Verdict("not reproduced", f"over the float32 tolerance: {e32:.3g}"))
    v64 = Verdict("reproduced") if oks["float64"] and e64 <= atol64 else Verdict("not reproduced", f"{e64:.3g}")
    measurements = (
        Measurement("max_err_float32", "numpy vs SDPA, max abs error, float32", e32, "", v32, SEED_F32,
                    detail=f"over {len(shapes)} shapes; tolerance atol {atol32:g} + rtol {rtol32:g}*|ref|; "
                           f"per shape: {', '.join(f'{e:.2e}' for e in errs['float32'])}"),
        Measurement("max_err_float64", "numpy vs SDPA, max abs error, float64", e64, "", v64, SEED_F64,
                    detail=f"tolerance atol {atol64:g} + rtol {rtol64:g}*|ref|; "
                           f"per shape: {', '.join(f'{e:.2e}' for e in errs['float64'])}"),
        Measurement("ratio_f32_f64", "float32 error / float64 error", e32 / e64 if e64 else float("inf"), "x"),
        Measurement("naive_softmax_nan", "softmax without max subtraction, logits ~ hundreds: NaN elements",
                    naive.n_nan_actual, "", detail=f"compare: ok={naive.ok}, {naive.reason}"),
        Measurement("safe_softmax_err", "the reference (max subtracted) on the same inputs, max abs error",
                    safe.max_abs_error, "", detail=f"ok={safe.ok}"),
    )
    explanation = (
        f"The numpy reference (softmax with the max subtracted, causal mask) matches torch's "
        f"scaled_dot_product_attention to {e32:.2e} in float32 and {e64:.2e} in float64 over "
        f"{len(shapes)} shapes, against the seed's 2.65e-7. The float32 error is rounding (float32's epsilon is "
        f"1.2e-7, and the error grows slowly with the sequence length T summed over), so the exact figure depends "
        f"on shapes and the BLAS in use; what reproduces is its order of magnitude and that it is {e32 / e64:.0e} "
        f"times the float64 error, which is what 'correct to floating-point precision' means.\n\n"
        f"The check also catches a real bug: without subtracting the max, exp overflows at logits above ~88 in "
        f"float32 and the output holds {naive.n_nan_actual} NaN; expkit.check.compare reports NaN and never 'ok'."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
