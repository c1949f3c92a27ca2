"""Matplotlib figures without pyplot's global state (``matplotlib.figure.Figure`` + Agg canvas)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["new_figure", "save_figure"]


def new_figure(ncols: int = 1, *, width_in: float = 6.4, height_in: float = 4.0) -> tuple[Any, list[Any]]:
    """A Figure and its axes (a list even for one column)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in * ncols, height_in), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0].tolist()
    return fig, axes


def save_figure(fig: Any, path: Path) -> Path:
    """Save as PNG (or SVG by suffix) at 110 dpi; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
