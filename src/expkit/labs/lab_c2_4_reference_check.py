"""Lab C2.4: a handwritten operator is right when it matches the reference to floating-point precision:
numpy causal attention vs ``torch.nn.functional.scaled_dot_product_attention``."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from typing import Any

from expkit.labs.base import AtMost, LabContext, LabOutput, Measurement, RuleChange, SeedFigure, judged
from expkit.labs.registry import lab

SEED_F32 = SeedFigure(
    "max_err_float32",
    "numpy attention vs SDPA, max abs error",
    2.65e-7,
    "",
    "max error 2.65e-7; 'correct' means ~1e-6 in float32",
)
SEED_F64 = SeedFigure("max_err_float64", "the same in float64", 1e-12, "", "'correct' means ~1e-12 in float64")
SHAPES_QUICK = ((2, 4, 64, 32), (1, 8, 128, 64))
SHAPES_FULL = ((2, 4, 64, 32), (1, 8, 128, 64), (4, 8, 256, 64), (1, 12, 512, 64))
T_SWEEP = (64, 128, 256, 512)  # sequence lengths at B = 1, H = 4, D = 64: does the float32 error grow with T?


# the seed's "~1e-6" as an order of magnitude: the seed's own einsum code (seed_einsum_attention) measured
# 0.46e-6 to 1.43e-6 max abs error against SDPA over SHAPES_FULL and seeds 0-4 here (issue 22), so a bar of exactly
# 1e-6 fails the method the seed calls correct; 3e-6 passes it with room, and a wrong scale (1/D) misses by 1e5
F32_RULE = AtMost(
    3e-6,
    source="the seed: 'correct' means ~1e-6 in float32, read as its order of magnitude (up to 3e-6): the seed's own "
    "einsum code measures up to 1.4e-6 on these shapes",
)
F64_RULE = AtMost(1e-12, source="the seed: 'correct' means ~1e-12 in float64")
FIRST_F32_RULE = AtMost(1e-6, source="the seed: 'correct' means ~1e-6 in float32 (expkit.check's float32 atol)")

# issue 36: when and why the rule changed after the lab first declared it (issue 12), from `git log -p`
RULE_HISTORY = (
    RuleChange(
        "max_err_float32",
        "2026-12-01",
        "6a34581",
        first=f"max abs error {FIRST_F32_RULE}",
        changed="max abs error at most 3e-6 ('~1e-6' read as its order of magnitude)",
        why="the seed's own einsum attention measured 0.46e-6 to 1.43e-6 against SDPA on the lab's shapes over seeds "
        "0-4 and failed the 1e-6 bar",
        seed_text="'与 F.scaled_dot_product_attention 最大误差 2.65 × 10⁻⁷：float32 约 1e-6、float64 约 1e-12 才叫"  # noqa: RUF001 - the seed's own words
        "「对了」' (max error against SDPA 2.65e-7: about 1e-6 in float32, about 1e-12 in float64 is 'correct'), under "
        "the seed's own einsum code: 'about' is an order of magnitude, and the code the seed calls correct must pass",
    ),
)


def attention_error(attention: Callable[..., Any], *, shape: tuple[int, ...], dtype: str, seed: int) -> float:
    """max |attention(q, k, v) - SDPA(q, k, v)| on random q, k, v of ``shape`` in ``dtype`` (numpy in, torch's
    causal SDPA as the reference): the lab's measurement for any handwritten attention."""
    import numpy as np
    import torch

    from expkit.check import compare, sdpa_causal

    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    ref = sdpa_causal(*(torch.from_numpy(x) for x in (q, k, v)))
    return compare(attention(q, k, v), ref).max_abs_error


def seed_einsum_attention(q, k, v):  # noqa: ANN001, ANN201 - numpy arrays (B, H, T, D)
    """The seed's own code, verbatim but for folding (B, H) into its B: einsum scores, causal mask, max
    subtracted, einsum with v."""
    import numpy as np

    shape = q.shape
    t, d = shape[-2], shape[-1]
    q, k, v = (x.reshape(-1, t, d) for x in (q, k, v))  # (B*H, T, D)
    mask = np.tril(np.ones((t, t), dtype=bool))
    scores = np.einsum("btd,bsd->bts", q, k) / np.sqrt(d)  # [B, T, S]
    scores = np.where(mask, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return np.einsum("bts,bsd->btd", p, v).reshape(shape)  # (B, H, T, D)


def describe_trend(xs: tuple[int, ...], ys: list[float]) -> str:
    """``rose with T`` / ``fell with T`` when every step goes one way, else what the figures show."""
    steps = [b - a for a, b in itertools.pairwise(ys)]
    if all(d > 0 for d in steps):
        return "rose with T"
    if all(d < 0 for d in steps):
        return "fell with T"
    hi = max(range(len(ys)), key=ys.__getitem__)
    return f"did not move steadily with T (largest at T = {xs[hi]})"


def _naive_attention(q, k, v):  # noqa: ANN001, ANN202 - the bug: softmax without subtracting the max
    import numpy as np

    t = q.shape[-2]
    s = (q @ np.swapaxes(k, -1, -2)) / q.dtype.type(np.sqrt(q.shape[-1]))
    s = np.where(np.triu(np.ones((t, t), dtype=bool), 1), -np.inf, s)
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow is the point of this function
        e = np.exp(s)
        return (e / e.sum(-1, keepdims=True)) @ v


@lab(
    id="C2.4",
    title="Check an operator against the reference",
    claims=("C2.4",),
    seed=(SEED_F32, SEED_F64),
    rule_history=RULE_HISTORY,
)
def run(ctx: LabContext) -> LabOutput:
    import numpy as np
    import torch

    from expkit.check import causal_attention, check_attention, compare, default_tolerance, sdpa_causal
    from expkit.render.figures import new_figure, save_figure

    shapes = SHAPES_QUICK if ctx.quick else SHAPES_FULL
    errs: dict[str, list[float]] = {"float32": [], "float64": []}
    for shape in shapes:
        for dtype in errs:
            rep = check_attention(shape=shape, dtype=dtype, seed=ctx.seed)
            errs[dtype].append(rep.max_abs_error)
    e32, e64 = max(errs["float32"]), max(errs["float64"])
    seed_code = [
        attention_error(seed_einsum_attention, shape=shape, dtype="float32", seed=ctx.seed) for shape in shapes
    ]
    n_sweep_seeds = 2 if ctx.quick else 5
    sweep = [
        statistics.median(
            check_attention(shape=(1, 4, t, 64), dtype="float32", seed=ctx.seed + s).max_abs_error
            for s in range(n_sweep_seeds)
        )
        for t in T_SWEEP
    ]
    sweep = [float(f"{e:.2e}") for e in sweep]  # the trend is read off the figures as the report shows them
    trend = describe_trend(T_SWEEP, sweep)
    atol32 = default_tolerance("float32").atol
    atol64 = default_tolerance("float64").atol

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
    ax.axhline(atol32, color="C0", lw=0.6, ls=":", label="float32 atol 1e-6 (expkit.check's default)")
    ax.axhline(F32_RULE.limit, color="C2", lw=0.6, ls="-.", label="float32 bar of the verdict 3e-6")
    ax.axhline(atol64, color="C1", lw=0.6, ls=":", label="float64 atol 1e-12")
    ax.set(
        yscale="log",
        xticks=xs,
        ylabel="max |numpy - SDPA|",
        xlabel="B x H x T x D",
        title="numpy causal attention vs torch SDPA",
    )
    ax.set_xticklabels(labels, fontsize=8)
    ax.legend(fontsize=7)
    path = save_figure(fig, ctx.figure_path("c2_4_attention_error.png"))

    # the seed's figure is one shape's (not given); its rule is 'correct' = ~1e-6 in float32, ~1e-12 in float64
    measurements = (
        judged(
            "max_err_float32",
            "numpy vs SDPA, max abs error, float32",
            e32,
            "",
            rule=F32_RULE,
            seed=SEED_F32,
            detail=f"worst of {len(shapes)} shapes: {', '.join(f'{e:.2e}' for e in errs['float32'])}; the seed's "
            f"2.65e-7 is one shape it does not give, so it is shown, not judged on. Under the rule as first stated "
            f"({FIRST_F32_RULE.text()}) it would be {FIRST_F32_RULE.judge(e32).kind} (rule history)",
        ),
        judged(
            "max_err_float64",
            "numpy vs SDPA, max abs error, float64",
            e64,
            "",
            rule=F64_RULE,
            seed=SEED_F64,
            detail=f"per shape: {', '.join(f'{e:.2e}' for e in errs['float64'])}",
        ),
        Measurement(
            "err_vs_t_float32",
            f"float32 max abs error at T = {', '.join(map(str, T_SWEEP))}",
            ", ".join(f"{e:.2e}" for e in sweep),
            "",
            detail=f"B = 1, H = 4, D = 64; median over {n_sweep_seeds} seeds per T: the error {trend}",
        ),
        Measurement(
            "seed_code_err_float32",
            "the seed's own einsum attention vs SDPA, max abs error, float32",
            max(seed_code),
            "",
            detail=f"per shape: {', '.join(f'{e:.2e}' for e in seed_code)}; the float32 bar is set so that the "
            f"seed's own method passes it ({F32_RULE})",
        ),
        Measurement("ratio_f32_f64", "float32 error / float64 error", e32 / e64 if e64 else float("inf"), "x"),
        Measurement(
            "naive_softmax_nan",
            "softmax without max subtraction, logits ~ hundreds: NaN elements",
            naive.n_nan_actual,
            "",
            detail=f"compare: ok={naive.ok}, {naive.reason}",
        ),
        Measurement(
            "safe_softmax_err",
            "the reference (max subtracted) on the same inputs, max abs error",
            safe.max_abs_error,
            "",
            detail=f"ok={safe.ok}",
        ),
    )
    explanation = (
        f"The numpy reference (softmax with the max subtracted, causal mask) matches torch's "
        f"scaled_dot_product_attention to {e32:.2e} in float32 and {e64:.2e} in float64 over "
        f"{len(shapes)} shapes, against the seed's 2.65e-7 for a shape it does not give; "
        f"{'both within' if F32_RULE.holds(e32) and F64_RULE.holds(e64) else 'not both within'} what the seed "
        f"calls correct (~1e-6, read as at most 3e-6, and 1e-12); the seed's own einsum code measured "
        f"{max(seed_code):.2e} on the same inputs. "
        f"The float32 error is rounding (float32's epsilon is 1.2e-7); over T = "
        f"{', '.join(map(str, T_SWEEP))} at fixed B, H, D its median was {', '.join(f'{e:.2e}' for e in sweep)}: it "
        + (
            f"{trend}. It is {e32 / e64:.0e} times the float64 error, which is what 'correct to floating-point "
            "precision' means.\n\n"
            if e64
            else f"{trend}. The float64 error was exactly 0 here.\n\n"
        )
        + (
            f"The check also catches a real bug: without subtracting the max, exp overflowed on these logits in "
            f"float32 and the output held {naive.n_nan_actual} NaN, which expkit.check.compare reported "
            f"({'not ok' if not naive.ok else 'ok, which it should not be'})."
            if naive.n_nan_actual
            else "Without subtracting the max the output held no NaN on these logits: the overflow bug did not show "
            f"here, and compare said ok={naive.ok}."
        )
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
