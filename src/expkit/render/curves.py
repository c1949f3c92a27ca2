"""Draw a CurveSet: thin per-seed lines, each group's mean with its 95% band (labelled with the number
of seeds), log x by default, and a difference panel shading where the difference excludes 0."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from expkit.render.figures import save_figure

if TYPE_CHECKING:
    from expkit.stats.curves import CurveSet, CurveSummary

__all__ = ["draw_curves", "render_curve_summary"]


def draw_curves(cs: CurveSet, path: Path, *, log_x: bool = True, log_y: bool = False, title: str | None = None) -> Path:
    """Write the figure to ``path`` (PNG or SVG by suffix) and return it.

    With ``log_x``, points at x <= 0 cannot be drawn and are left out (step 0, time 0). Values whose
    transform overflows (x near 1e308 on a log axis) are not drawn, without numpy's warnings on stderr.
    """
    import warnings

    import numpy as np

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return _draw(cs, path, log_x=log_x, log_y=log_y, title=title)


def _draw(cs: CurveSet, path: Path, *, log_x: bool, log_y: bool, title: str | None) -> Path:
    from matplotlib.figure import Figure

    has_diff = cs.difference is not None
    fig = Figure(figsize=(7.5, 6.2 if has_diff else 4.4), layout="constrained")
    if has_diff:
        ax, axd = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1.5))
    else:
        ax, axd = fig.subplots(1, 1), None
    lvl = f"{cs.bands[0].level:.0%}" if cs.bands else "95%"
    for i, band in enumerate(cs.bands):
        color = f"C{i % 10}"
        keep = band.x > 0 if log_x else slice(None)
        for ys in band.ys:
            ax.plot(band.x[keep], ys[keep], color=color, lw=0.6, alpha=0.35)
        label = f"{band.group} (mean of {band.n_seeds} seed{'s' if band.n_seeds != 1 else ''}"
        label += f", {lvl} t-band)" if band.low is not None else ", no band)"
        ax.plot(band.x[keep], band.mean[keep], color=color, lw=1.8, label=label)
        if band.low is not None and band.high is not None:
            ax.fill_between(band.x[keep], band.low[keep], band.high[keep], color=color, alpha=0.22, lw=0)
    smooth = f", EMA {cs.ema:g} (debiased) per seed" if cs.ema else ""
    ax.set(ylabel=cs.metric, title=title or f"{cs.metric} vs {cs.x_key}{smooth}")
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    if axd is not None and cs.difference is not None:
        d = cs.difference
        keep = d.x > 0 if log_x else slice(None)
        x = d.x[keep]
        axd.plot(x, d.delta[keep], color="k", lw=1.2, label=f"{d.group_a} - {d.group_b}")
        axd.fill_between(x, d.low[keep], d.high[keep], color="0.5", alpha=0.3, lw=0, label=f"{lvl} Welch interval")
        axd.axhline(0.0, color="k", lw=0.6)
        ymin, ymax = float(d.low[keep].min()), float(d.high[keep].max())
        axd.fill_between(
            x, ymin, ymax, where=d.excludes_zero[keep], color="C3", alpha=0.12, lw=0, label="interval excludes 0"
        )
        axd.set(ylabel=f"difference in {cs.metric}", xlabel=cs.x_key)
        axd.legend(fontsize=7)
        axd.grid(alpha=0.3, which="both")
    else:
        ax.set_xlabel(cs.x_key)
    return save_figure(fig, path)


def render_curve_summary(s: CurveSummary) -> None:
    """A line per group (final mean and interval), the difference panel's counts, the notes, the figure."""
    for g in s.groups:
        ci = f"[{g.final_low:.4g}, {g.final_high:.4g}]" if g.final_low is not None else "(1 seed, no interval)"
        print(f"{g.group}: {g.n_seeds} seeds, final {s.metric} {g.final_mean:.4g} {ci} at {s.x} {g.final_x:g}")
    d = s.difference
    if d is not None:
        print(
            f"{d.groups}: interval of the difference excludes 0 at {d.n_excludes_zero} of {d.n_points} "
            f"points; bands do not overlap at {d.n_bands_apart}; final delta {d.final_delta:+.4g} "
            f"[{d.final_low:+.4g}, {d.final_high:+.4g}]"
        )
    for n in s.notes:
        print(f"note: {n}")
    print(f"figure: {s.figure}")
