"""Roofline figures (log-log: arithmetic intensity vs attainable FLOP/s) and the profile's bucket bars."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RoofLine", "RoofPoint", "draw_roofline"]


@dataclass(frozen=True)
class RoofLine:
    """One roof to draw: peak FLOP/s and bandwidth bytes/s."""

    label: str
    peak_flop_s: float
    bandwidth_bytes_s: float


@dataclass(frozen=True)
class RoofPoint:
    """A point under a roof: intensity (FLOP/byte) and achieved or attainable FLOP/s."""

    label: str
    intensity_flop_per_byte: float
    flop_s: float
    marker: str = "o"
    color: str | None = None


def draw_roofline(
    ax: Any,
    roofs: Sequence[RoofLine],
    points: Sequence[RoofPoint],
    *,
    title: str = "",
    x_range: tuple[float, float] | None = None,
) -> None:
    """Draw each roof (bandwidth slope up to the ridge, then flat) and the points, log-log."""
    import numpy as np

    xs = [p.intensity_flop_per_byte for p in points] + [r.peak_flop_s / r.bandwidth_bytes_s for r in roofs]
    lo, hi = x_range or (min(min(xs) / 4, 0.1), max(xs) * 4)
    grid = np.logspace(np.log10(lo), np.log10(hi), 200)
    for i, r in enumerate(roofs):
        ridge = r.peak_flop_s / r.bandwidth_bytes_s
        ax.plot(
            grid,
            np.minimum(r.peak_flop_s, grid * r.bandwidth_bytes_s),
            color=f"C{i}",
            lw=1.6,
            label=f"{r.label} (ridge {ridge:.3g} FLOP/B)",
        )
        ax.axvline(ridge, color=f"C{i}", lw=0.6, ls=":")
    for j, p in enumerate(points):
        ax.plot(
            [p.intensity_flop_per_byte],
            [p.flop_s],
            p.marker,
            color=p.color or f"C{(j + len(roofs)) % 10}",
            ms=7,
            label=p.label,
        )
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)", ylabel="FLOP/s", title=title)
    ax.grid(True, which="major", lw=0.3)
    ax.legend(fontsize=7, loc="lower right")
