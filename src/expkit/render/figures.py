"""Matplotlib figures without pyplot's global state (``matplotlib.figure.Figure`` + Agg canvas)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from expkit.errors import InputError

__all__ = ["new_figure", "save_figure"]

# What matplotlib raises while laying out data whose span float64 cannot hold (values near +-1e308): the tick
# locator's arange, and limits that came out infinite.
_LAYOUT_ERRORS = ("arange: cannot compute length", "cannot be NaN or Inf", "Maximum allowed size exceeded")


def new_figure(ncols: int = 1, *, width_in: float = 6.4, height_in: float = 4.0) -> tuple[Any, list[Any]]:
    """A Figure and its axes (a list even for one column)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in * ncols, height_in), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0].tolist()
    return fig, axes


def save_figure(fig: Any, path: Path) -> Path:
    """Save as PNG (or SVG by suffix) at 110 dpi; returns the path.

    Raises:
        InputError: ``path`` exists and is not a regular file (a FIFO would block the write until a reader
            came, forever: issue 36; a device or a folder), or the data's span is more than float64 can lay
            out on an axis (values near +-1e308).
    """
    import numpy as np

    path = Path(path)
    if path.exists() and not path.is_file():
        raise InputError(
            "exists and is not a regular file (a FIFO, a device or a folder): no figure is written there",
            path=path,
            hint="give --out a new file name, or a file to replace",
        )
    formats = fig.canvas.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in formats:  # matplotlib's ValueError was an exit 3 (`--plot x.jsonl`)
        raise InputError(
            f"a figure cannot be written as {path.suffix or 'a file without a suffix'!r}",
            path=path,
            hint=f"end the name in .png or .svg (or one of {', '.join(sorted(formats))})",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # overflow in a transform: the point is not drawn
            fig.savefig(path, dpi=110)
    except (ValueError, OverflowError) as exc:
        if not any(text in str(exc) for text in _LAYOUT_ERRORS):
            raise
        raise InputError(
            f"the figure's values span more than float64 can lay out on an axis ({exc})",
            path=path,
            hint="leave out the runs or values near +-1e308, or rescale them",
        ) from None
    return path
