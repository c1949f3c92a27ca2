"""Lab C2.2: an eval table needs its interval; at 80 questions a 5-point difference is invisible."""

from __future__ import annotations

import math

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict, verdict_within
from expkit.labs.registry import lab

SEED_HALF_WIDTH = SeedFigure("half_width_n80", "95% half-width at n = 80", 10.9, "points", "+-10.9 points at 80 questions")
SEED_FIVE_POINTS = SeedFigure("five_points_n80", "5-point difference at n = 80", None, "",
                              "a 5-point difference cannot be resolved")
N_GRID = (20, 30, 50, 80, 120, 200, 300, 500, 800, 1200, 2000, 3000, 5000)


def _smallest_resolvable_newcombe(n: int, p: float = 0.5) -> float:
    """Smallest k1/n - k2/n (k2 = round(p n)) whose Newcombe interval excludes 0, by bisection."""
    from expkit.stats import newcombe_interval

    k2 = round(p * n)
    lo, hi = 0, n - k2  # lo never resolves, hi may
    if not newcombe_interval(n, n, k2, n).excludes_zero:
        return math.nan
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if newcombe_interval(k2 + mid, n, k2, n).excludes_zero:
            hi = mid
        else:
            lo = mid
    return hi / n


def _simulated_power(n: int, p_a: float, p_b: float, sims: int, seed: int) -> float:
    """Share of simulated evals (two models, n items each, independent) whose Newcombe 95% interval
    for the difference excludes 0, i.e. the chance the table tells them apart."""
    import numpy as np

    from expkit.stats import newcombe_interval

    rng = np.random.default_rng(seed)
    ka = rng.binomial(n, p_a, size=sims)
    kb = rng.binomial(n, p_b, size=sims)
    hits = sum(newcombe_interval(int(a), n, int(b), n).excludes_zero for a, b in zip(ka, kb))
    return hits / sims


@lab(id="C2.2", title="Intervals on an eval table", claims=("C2.2",), seed=(SEED_HALF_WIDTH, SEED_FIVE_POINTS))
def run(ctx: LabContext) -> LabOutput:
    from expkit.render.figures import new_figure, save_figure
    from expkit.stats import min_detectable_difference, wald_interval, wilson_interval

    n80 = wald_interval(40, 80)
    wilson80 = wilson_interval(40, 80)
    mdd80 = min_detectable_difference(80)
    mdd80_newcombe = _smallest_resolvable_newcombe(80)
    # items per model so that z*sqrt(2 p(1-p)/n) <= 0.05 at p = 0.5
    n_for_5 = next(n for n in range(80, 100_000) if min_detectable_difference(n) <= 0.05)
    sims = 2_000 if ctx.quick else 20_000
    power = _simulated_power(80, 0.75, 0.70, sims, ctx.seed)

    # figure 1: half-width vs n, Wald vs Wilson, at p = 0.5 and p = 0.9
    fig, (ax1, ax2) = new_figure(2)
    for p, style in ((0.5, "-"), (0.9, "--")):
        ax1.plot(N_GRID, [100 * wald_interval(round(p * n), n).half_width for n in N_GRID], "C0" + style,
                 label=f"Wald, p={p}")
        ax1.plot(N_GRID, [100 * wilson_interval(round(p * n), n).half_width for n in N_GRID], "C1" + style,
                 label=f"Wilson, p={p}")
    ax1.axvline(80, color="grey", lw=0.8)
    ax1.set(xscale="log", xlabel="items n", ylabel="95% half-width (points)", title="Interval half-width")
    ax1.legend()
    # figure 2: smallest difference two models (n items each) must show to be told apart
    ax2.plot(N_GRID, [100 * min_detectable_difference(n) for n in N_GRID], "C0-", label="Wald z-test")
    ax2.plot(N_GRID, [100 * _smallest_resolvable_newcombe(n) for n in N_GRID], "C1-", label="Newcombe (Wilson)")
    ax2.axhline(5, color="C3", lw=0.8, label="5 points")
    ax2.set(xscale="log", yscale="log", xlabel="items n per model", ylabel="difference (points)",
            title="Smallest resolvable difference, p = 0.5")
    ax2.legend()
    path = save_figure(fig, ctx.figure_path("c2_2_intervals.png"))

    half_points = 100 * n80.half_width
    five_hidden = mdd80 > 0.05 and mdd80_newcombe > 0.05
    measurements = (
        Measurement("half_width_n80", "Wald 95% half-width, 40/80 correct", half_points, "points",
                    verdict_within(half_points, SEED_HALF_WIDTH.value, abs_tol=0.1), SEED_HALF_WIDTH,
                    detail=f"interval [{n80.low:.4f}, {n80.high:.4f}]; the seed truncates 10.96 to 10.9"),
        Measurement("wilson_half_width_n80", "Wilson 95% half-width, 40/80 correct", 100 * wilson80.half_width,
                    "points", detail=f"interval [{wilson80.low:.4f}, {wilson80.high:.4f}]"),
        Measurement("mdd_n80", "smallest resolvable difference at n = 80 (Wald z-test)", 100 * mdd80, "points",
                    Verdict("reproduced") if five_hidden else Verdict("not reproduced", "5 points would resolve"),
                    SEED_FIVE_POINTS,
                    detail=f"Newcombe-Wilson: {100 * mdd80_newcombe:.1f} points"),
        Measurement("power_5pt_n80", "chance to tell 75% from 70% at n = 80 (simulated)", 100 * power, "%",
                    detail=f"{sims} simulated evals, Newcombe 95% interval excludes 0"),
        Measurement("n_for_5pt", "items per model to resolve 5 points (Wald, p = 0.5)", n_for_5, "items"),
    )
    explanation = (
        f"At 80 questions and 50% accuracy the Wald interval is +-{half_points:.2f} points "
        f"({n80.low:.3f} to {n80.high:.3f}); Wilson gives +-{100 * wilson80.half_width:.2f}. Two models "
        f"scored on 80 questions each must differ by {100 * mdd80:.1f} points before a 95% test separates "
        f"them, so a 5-point gap is noise: simulated, a true 75% vs 70% is told apart in only "
        f"{100 * power:.0f}% of evals. Resolving 5 points needs about {n_for_5} items per model, or a paired "
        "comparison on the same items (expkit stats, paired).\n\n"
        "Wald and Wilson agree near p = 0.5 and large n; near 0.9 or small n Wald is too narrow "
        "(it is zero-width at 0% or 100%), which is why expkit reports Wilson by default."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
