"""A curve cut to what a screen can show: min-max decimation, which keeps every spike.

A chart ``width`` pixels wide cannot show more than two values per pixel column (the lowest and the
highest), so a million-point loss curve is cut to ``2 * buckets`` points: the series is split into
``buckets`` runs of consecutive points and each run keeps its minimum and its maximum, in step order. A
one-step spike survives, which strided sampling does not promise. The kernel is tsdownsample's
``MinMaxDownsampler`` (Rust, MIT; the library behind plotly-resampler), ~1 ms for a million points here;
reference: Jugel et al., "M4: A Visualization-Oriented Time Series Data Aggregation", VLDB 2014.

Non-finite values (a diverged loss) are not compared: the finite points are decimated, and the first point
of every run of NaN/inf is kept as well, so the chart shows where the curve broke off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Decimated", "decimate_minmax"]


@dataclass(frozen=True)
class Decimated:
    """The points kept (``x``, ``y``) of ``n_in`` points; ``y`` may hold NaN (a gap the chart shows)."""

    x: np.ndarray
    y: np.ndarray
    n_in: int

    @property
    def n_out(self) -> int:
        return int(self.x.size)


def decimate_minmax(x: np.ndarray, y: np.ndarray, *, buckets: int) -> Decimated:
    """Keep, for each of ``buckets`` runs of consecutive finite points, the minimum and the maximum.

    Args:
        x: the steps, in order, one per value.
        y: the values (float; NaN/inf kept as the first point of each non-finite run).
        buckets: about half the number of points wanted (a chart's pixel width); at least 1.

    Returns:
        ``Decimated`` with about ``2 * buckets`` points (plus one per non-finite run) in step order; the input
        itself when it already has at most ``2 * buckets`` points.

    Raises:
        ValueError: ``buckets`` below 1, or ``x`` and ``y`` not 1-D of one length.

    Example:
        >>> d = decimate_minmax(np.arange(8.0), np.array([0, 9, 1, 1, 1, 1, -5, 1.0]), buckets=2)
        >>> d.x.tolist(), d.y.tolist()
        ([0.0, 1.0, 4.0, 6.0], [0.0, 9.0, 1.0, -5.0])
    """
    from tsdownsample import MinMaxDownsampler

    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, got {buckets}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of one length, got {x.shape} and {y.shape}")
    n = x.size
    if n <= 2 * buckets:
        return Decimated(x=x, y=y, n_in=n)
    finite = np.isfinite(y)
    where = np.flatnonzero(finite)
    keep = where
    if where.size > 2 * buckets:
        keep = where[MinMaxDownsampler().downsample(y[where], n_out=2 * buckets)]
    broken = ~finite
    starts = np.flatnonzero(broken & ~np.concatenate([[False], broken[:-1]]))  # first of each non-finite run
    keep = np.union1d(keep, starts)
    return Decimated(x=x[keep], y=y[keep], n_in=n)
