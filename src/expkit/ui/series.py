"""A run's metric curves as the web view serves them: read once, then only the bytes appended since.

``metrics.jsonl`` grows while a run runs. ``SeriesCache`` keeps, per run, the byte offset it has read to
and every metric's (step, value) points; a request reads the new complete lines only (a torn last line
waits for its newline), so a live page polling every two seconds costs what was appended, not the file.
A step logged twice (a final ``evaluate()`` at the last training step) keeps its last value, and the
payload says how many such repeats there were. Only rank 0's file is shown; other ranks' files are named.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from expkit.runs.metrics import metric_value
from expkit.ui.downsample import decimate_minmax

__all__ = ["Series", "SeriesCache"]

_SKIP_KEYS = ("step", "rank", "time")


@dataclass
class _Points:
    """One metric's points as arrays (grown by concatenation as lines arrive) and, once asked for, the same
    with one value per step (kept until more points arrive)."""

    x: np.ndarray = field(default_factory=lambda: np.empty(0))
    y: np.ndarray = field(default_factory=lambda: np.empty(0))
    by_step: tuple[np.ndarray, np.ndarray, int] | None = None

    def extend(self, xs: list[float], ys: list[float]) -> None:
        self.x = np.concatenate([self.x, np.array(xs, dtype=np.float64)])
        self.y = np.concatenate([self.y, np.array(ys, dtype=np.float64)])
        self.by_step = None

    def one_per_step(self) -> tuple[np.ndarray, np.ndarray, int]:
        if self.by_step is None:
            self.by_step = _last_per_step(self.x, self.y)
        return self.by_step


@dataclass
class _RunCurves:
    """What has been read of one run's ``metrics.jsonl``: up to ``offset`` bytes, as points per metric."""

    offset: int = 0
    inode: int | None = None
    points: dict[str, _Points] = field(default_factory=dict)


@dataclass(frozen=True)
class Series:
    """One metric of one run, cut to the chart's width: ``x``/``y`` kept of ``n_points`` read."""

    run: str
    metric: str
    x: list[float]
    y: list[float | None]
    n_points: int
    n_shown: int
    repeated_steps: int
    metrics: tuple[str, ...]
    other_rank_files: tuple[str, ...]


def _last_per_step(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Sort by step (stable) and keep the last value logged at each step (no copy when steps only rise)."""
    if x.size < 2 or bool(np.all(x[1:] > x[:-1])):
        return x, y, 0
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    last = np.ones(x.size, dtype=bool)
    last[:-1] = x[1:] != x[:-1]
    return x[last], y[last], int(x.size - last.sum())


def _add_line(new: dict[str, tuple[list[float], list[float]]], line: bytes) -> None:
    """Add one metrics line's numeric values to ``new`` (metric -> steps, values); other lines are passed over."""
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if not isinstance(rec, dict) or type(rec.get("step")) is not int:
        return
    step = float(rec["step"])
    for key, value in rec.items():
        kind = type(value)
        if kind is float or kind is int:  # the common case, without metric_value's checks
            num: float | int | None = value
        else:
            num = metric_value(value)
        if num is None or key in _SKIP_KEYS:
            continue
        xs, ys = new.setdefault(key, ([], []))
        xs.append(step)
        ys.append(float(num))


class SeriesCache:
    """Per-run incremental readers of ``metrics.jsonl``; safe to share between request threads."""

    def __init__(self) -> None:
        self._runs: dict[Path, _RunCurves] = {}
        self._lock = threading.Lock()

    def _refresh(self, run_dir: Path) -> _RunCurves:
        path = run_dir / "metrics.jsonl"
        state = self._runs.setdefault(run_dir, _RunCurves())
        try:
            st = path.stat()
        except OSError:
            return state
        if not path.is_file():  # a FIFO or a folder in its place is never opened
            return state
        if not path.resolve().is_relative_to(run_dir.resolve()):  # linked out of the run folder: not read
            return state
        if state.inode != st.st_ino or st.st_size < state.offset:  # replaced or truncated: read afresh
            state.offset, state.inode, state.points = 0, st.st_ino, {}
        if st.st_size == state.offset:
            return state
        with path.open("rb") as f:
            f.seek(state.offset)
            chunk = f.read(st.st_size - state.offset)
        end = chunk.rfind(b"\n") + 1  # complete lines only; a torn last line waits for its newline
        state.offset += end
        new: dict[str, tuple[list[float], list[float]]] = {}
        for line in chunk[:end].splitlines():
            _add_line(new, line)
        for key, (xs, ys) in new.items():
            state.points.setdefault(key, _Points()).extend(xs, ys)
        return state

    def metrics_of(self, run_dir: Path) -> tuple[str, ...]:
        """The metric names logged so far, in the order first seen."""
        with self._lock:
            return tuple(self._refresh(run_dir).points)

    def series(self, run_dir: Path, metric: str, *, buckets: int) -> Series:
        """``metric`` of the run in ``run_dir``, last value per step, min-max decimated to ``buckets``."""
        with self._lock:
            state = self._refresh(run_dir)
            x, y, repeats = state.points.get(metric, _Points()).one_per_step()
            names = tuple(state.points)
        d = decimate_minmax(x, y, buckets=buckets)
        others = tuple(sorted(p.name for p in run_dir.glob("metrics.rank*.jsonl")))
        return Series(
            run=run_dir.name,
            metric=metric,
            x=d.x.tolist(),
            y=[None if not np.isfinite(v) else float(v) for v in d.y],
            n_points=int(x.size),
            n_shown=int(d.x.size),
            repeated_steps=repeats,
            metrics=names,
            other_rank_files=others,
        )
