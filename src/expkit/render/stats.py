"""``expkit stats`` on the console: one interval line, the power summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from expkit.stats.intervals import ProportionInterval
    from expkit.stats.power import PowerAnalysis

__all__ = ["render_interval", "render_power"]


def render_interval(iv: ProportionInterval) -> None:
    """``40/80 = 0.5000   95% wald interval [0.3904, 0.6096]   half-width 0.1096 (+-10.96 points)``."""
    print(
        f"{iv.k}/{iv.n} = {iv.estimate:.4f}   {iv.level:.0%} {iv.method} interval "
        f"[{iv.low:.4f}, {iv.high:.4f}]   half-width {iv.half_width:.4f} (+-{100 * iv.half_width:.2f} points)"
    )


def render_power(a: PowerAnalysis) -> None:
    """The design, items needed for the target power, power at n and the minimum detectable effect."""
    design = "unpaired" if a.paired_corr is None else f"paired, per-item correlation {a.paired_corr:g}"
    print(f"{a.baseline:g} vs {a.baseline + a.delta:g} ({design}), alpha {a.alpha:g}, two-sided")
    print(f"  items per model for {a.target_power:.0%} power: {a.n_required:,}")
    print(f"  power at n = {a.n:,}: {a.power:.1%}")
    mde = f"{100 * a.mde:.2f}" if 100 * a.mde >= 0.01 else f"{100 * a.mde:.3g}"
    print(f"  minimum detectable effect at n = {a.n:,} ({a.target_power:.0%} power): {mde} points")
