"""Lab C2.2: an eval table needs its interval; at 80 questions a 5-point difference is invisible."""

from __future__ import annotations

import math

from expkit.labs.base import AtLeast, LabContext, LabOutput, Measurement, SeedFigure, Within, judged, not_measured
from expkit.labs.registry import lab

HALF_WIDTH_POINTS = 10.9  # seed: +-10.9 points at 80 questions
SEED_HALF_WIDTH = SeedFigure(
    "half_width_n80", "95% half-width at n = 80", HALF_WIDTH_POINTS, "points", "+-10.9 points at 80 questions"
)
SEED_FIVE_POINTS = SeedFigure(
    "five_points_n80", "5-point difference at n = 80", None, "", "a 5-point difference cannot be resolved"
)
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
    hits = sum(newcombe_interval(int(a), n, int(b), n).excludes_zero for a, b in zip(ka, kb, strict=True))
    return hits / sims


# paired vs unpaired on one simulated eval (C2.2 extension): accuracies 70% vs 75%, items of varied
# difficulty (logit sd 1.5), so the two models' per-item scores are correlated as real evals are
P_BASE, P_NEW = 0.70, 0.75
DIFFICULTY_SD = 1.5
SIM_N_GRID = (100, 200, 300, 500, 700, 1000, 1400, 2000)


def _simulated_item_pool(seed: int, size: int = 200_000):  # noqa: ANN202 - numpy arrays
    """Per-item probabilities of the two models: sigmoid(ability - difficulty), abilities solved so the
    pool accuracies are 70% and 75%."""
    import numpy as np
    from scipy.optimize import brentq

    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, DIFFICULTY_SD, size)

    def prob(ability: float):  # noqa: ANN202
        return 1.0 / (1.0 + np.exp(difficulty - ability))

    a_base = brentq(lambda a: prob(a).mean() - P_BASE, -10, 10)
    a_new = brentq(lambda a: prob(a).mean() - P_NEW, -10, 10)
    return prob(a_base), prob(a_new)


def _simulated_power_paired_unpaired(n_grid, sims: int, seed: int):  # noqa: ANN001, ANN202
    """For each n: share of simulated evals (both models on the same n items) that a paired McNemar test
    and an unpaired Newcombe interval call significant at 5%; and the per-item score correlation."""
    import numpy as np

    from expkit.stats import newcombe_interval
    from expkit.stats.paired import mcnemar_p_values

    p_base, p_new = _simulated_item_pool(seed)
    rng = np.random.default_rng(seed + 1)
    paired, unpaired, corrs = [], [], []
    for n in n_grid:
        items = rng.integers(0, p_base.size, size=(sims, n))  # (sims, n) item draws
        base = rng.random((sims, n)) < p_base[items]
        new = rng.random((sims, n)) < p_new[items]
        b = np.sum(new & ~base, axis=1)
        c = np.sum(~new & base, axis=1)
        paired.append(float(np.mean(mcnemar_p_values(b, c) < 0.05)))
        kn, kb = new.sum(axis=1), base.sum(axis=1)
        unpaired.append(
            float(np.mean([newcombe_interval(int(x), n, int(y), n).excludes_zero for x, y in zip(kn, kb, strict=True)]))
        )
        corrs.append(float(np.corrcoef(base.ravel().astype(float), new.ravel().astype(float))[0, 1]))
    return paired, unpaired, float(np.mean(corrs))


def _crossing(n_grid, power, target: float = 0.8) -> float:  # noqa: ANN001
    """n where a simulated power curve first reaches ``target`` (linear interpolation); NaN if never."""
    for i, p in enumerate(power):
        if p >= target:
            if i == 0:
                return float(n_grid[0])
            n0, n1, p0 = n_grid[i - 1], n_grid[i], power[i - 1]
            return n0 + (target - p0) * (n1 - n0) / (p - p0)
    return float("nan")


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
        ax1.plot(
            N_GRID,
            [100 * wald_interval(round(p * n), n).half_width for n in N_GRID],
            "C0" + style,
            label=f"Wald, p={p}",
        )
        ax1.plot(
            N_GRID,
            [100 * wilson_interval(round(p * n), n).half_width for n in N_GRID],
            "C1" + style,
            label=f"Wilson, p={p}",
        )
    ax1.axvline(80, color="grey", lw=0.8)
    ax1.set(xscale="log", xlabel="items n", ylabel="95% half-width (points)", title="Interval half-width")
    ax1.legend()
    # figure 2: smallest difference two models (n items each) must show to be told apart
    ax2.plot(N_GRID, [100 * min_detectable_difference(n) for n in N_GRID], "C0-", label="Wald z-test")
    ax2.plot(N_GRID, [100 * _smallest_resolvable_newcombe(n) for n in N_GRID], "C1-", label="Newcombe (Wilson)")
    ax2.axhline(5, color="C3", lw=0.8, label="5 points")
    ax2.set(
        xscale="log",
        yscale="log",
        xlabel="items n per model",
        ylabel="difference (points)",
        title="Smallest resolvable difference, p = 0.5",
    )
    ax2.legend()
    path = save_figure(fig, ctx.figure_path("c2_2_intervals.png"))

    half_points = 100 * n80.half_width
    five_hidden = mdd80 > 0.05 and mdd80_newcombe > 0.05
    five_text = (
        "so a 5-point gap is noise" if five_hidden else "so here even a 5-point gap can be resolved, against the seed"
    )
    measurements = (
        not_measured(
            judged(
                "half_width_n80",
                "Wald 95% half-width, 40/80 correct",
                half_points,
                "points",
                rule=Within(HALF_WIDTH_POINTS, abs=0.1, source="our choice: the seed gives one decimal"),
                seed=SEED_HALF_WIDTH,
                detail=f"interval [{n80.low:.4f}, {n80.high:.4f}]; 100*1.96*sqrt(.25/80) = 10.96",
            ),
            "computed",
        ),
        Measurement(
            "wilson_half_width_n80",
            "Wilson 95% half-width, 40/80 correct",
            100 * wilson80.half_width,
            "points",
            detail=f"interval [{wilson80.low:.4f}, {wilson80.high:.4f}]",
            provenance="computed",
        ),
        not_measured(
            judged(
                "mdd_n80",
                "smallest resolvable difference at n = 80 (Wald z-test)",
                100 * mdd80,
                "points",
                rule=AtLeast(
                    5.0,
                    source="the seed: 5 points cannot be resolved, so the smallest resolvable difference is above 5",
                ),
                seed=SEED_FIVE_POINTS,
                detail=f"Newcombe-Wilson: {100 * mdd80_newcombe:.1f} points",
            ),
            "computed",
        ),
        Measurement(
            "power_5pt_n80",
            "chance to tell 75% from 70% at n = 80 (simulated)",
            100 * power,
            "%",
            detail=f"{sims} simulated evals, Newcombe 95% interval excludes 0",
            provenance="computed",  # binomial draws from assumed accuracies: nothing on this machine is measured
        ),
        Measurement(
            "n_for_5pt", "items per model to resolve 5 points (Wald, p = 0.5)", n_for_5, "items", provenance="computed"
        ),
    )
    explanation = (
        f"At 80 questions and 50% accuracy the Wald interval is +-{half_points:.2f} points "
        f"({n80.low:.3f} to {n80.high:.3f}); Wilson gives +-{100 * wilson80.half_width:.2f}. Two models "
        f"scored on 80 questions each must differ by {100 * mdd80:.1f} points before a 95% test separates "
        f"them, {five_text}: simulated, a true 75% vs 70% is told apart in "
        f"{100 * power:.0f}% of evals. Resolving 5 points needs about {n_for_5} items per model, or a paired "
        "comparison on the same items (expkit stats, paired).\n\n"
        "Wald and Wilson agree near p = 0.5 and large n; near 0.9 or small n Wald is too narrow "
        "(it is zero-width at 0% or 100%), which is why expkit reports Wilson by default."
    )
    measurements2, explanation2, path2 = _paired_vs_unpaired(ctx)
    return LabOutput(
        measurements=measurements + measurements2,
        explanation=explanation + "\n\n" + explanation2,
        figures=(path, path2),
    )


def _paired_vs_unpaired(ctx: LabContext):  # noqa: ANN202 - (measurements, explanation, figure path)
    """The extension: a power curve, and the items a paired vs an unpaired analysis of the same
    simulated eval needs to resolve a 5-point difference."""
    from expkit.render.figures import new_figure, save_figure
    from expkit.stats.power import power_at, required_items

    sims = 300 if ctx.quick else 2_000
    paired_pw, unpaired_pw, rho = _simulated_power_paired_unpaired(SIM_N_GRID, sims, ctx.seed)
    n_paired_sim = _crossing(SIM_N_GRID, paired_pw)
    n_unpaired_sim = _crossing(SIM_N_GRID, unpaired_pw)
    n_paired = required_items(baseline=P_BASE, delta=P_NEW - P_BASE, paired_corr=rho)
    n_unpaired = required_items(baseline=P_BASE, delta=P_NEW - P_BASE)

    grid = [round(20 * 1.15**i) for i in range(40) if 20 * 1.15**i <= 4000]
    fig, (ax1, ax2) = new_figure(2)
    for corr, style, label in ((None, "C0-", "unpaired"), (rho, "C1-", f"paired, rho = {rho:.2f}")):
        ax1.plot(
            grid,
            [power_at(baseline=P_BASE, delta=P_NEW - P_BASE, n=n, paired_corr=corr) for n in grid],
            style,
            label=label,
        )
    ax1.plot(SIM_N_GRID, unpaired_pw, "C0o", ms=4, label="simulated, Newcombe")
    ax1.plot(SIM_N_GRID, paired_pw, "C1s", ms=4, label="simulated, McNemar")
    ax1.axhline(0.8, color="grey", lw=0.8)
    ax1.axvline(80, color="C3", lw=0.8, label="80 items (seed)")
    ax1.set(
        xscale="log",
        xlabel="items n (same items for both models)",
        ylabel="power",
        title="Power to tell 70% from 75% (alpha 5%)",
    )
    ax1.legend(fontsize=7)
    ax2.bar(
        ["unpaired\n(formula)", "unpaired\n(simulated)", "paired\n(formula)", "paired\n(simulated)"],
        [n_unpaired, n_unpaired_sim, n_paired, n_paired_sim],
        color=["C0", "C0", "C1", "C1"],
    )
    ax2.set(ylabel="items for 80% power", title="Items needed for a 5-point difference")
    path = save_figure(fig, ctx.figure_path("c2_2_power_paired.png"))

    ms = (
        Measurement(
            "power_n80_analytic",
            "power at 80 items, 70% vs 75%, unpaired (formula)",
            100 * power_at(baseline=P_BASE, delta=P_NEW - P_BASE, n=80),
            "%",
            provenance="computed",
        ),
        Measurement(
            "item_corr",
            "per-item correlation of the two models' 0/1 scores (simulated eval)",
            rho,
            "",
            detail=f"item difficulty logit sd {DIFFICULTY_SD}",
            provenance="computed",  # a simulated eval, not one run here
        ),
        Measurement(
            "n_unpaired_5pt",
            "items for 80% power, unpaired analysis (formula)",
            n_unpaired,
            "items",
            detail=f"simulated: {n_unpaired_sim:.0f} ({sims} evals per n)",
            provenance="computed",
        ),
        Measurement(
            "n_paired_5pt",
            "items for 80% power, paired analysis of the same items (formula)",
            n_paired,
            "items",
            detail=f"simulated McNemar: {n_paired_sim:.0f} ({sims} evals per n)",
            provenance="computed",
        ),
        Measurement(
            "paired_saving",
            "items saved by pairing",
            n_unpaired / n_paired,
            "x",
            detail="unpaired / paired items, formula",
            provenance="computed",
        ),
    )
    text = (
        f"Pairing is the cheaper fix. On a simulated eval where both models answer the same items (70% vs 75%, "
        f"items of varied difficulty, per-item score correlation {rho:.2f}), an unpaired comparison needs about "
        f"{n_unpaired:,} items for 80% power (simulated: {n_unpaired_sim:.0f}); McNemar's paired test on the very "
        f"same items needs about {n_paired:,} (simulated: {n_paired_sim:.0f}), {n_unpaired / n_paired:.1f}x fewer, "
        f"because the items both models get right or both get wrong carry no information about the difference "
        f"(these counts are for 80% power; the {n_unpaired:,} here vs the smaller count above is 80% vs 50% power). "
        f"expkit stats table pairs by item automatically; expkit stats power --paired-corr plans the eval."
    )
    return ms, text, path
