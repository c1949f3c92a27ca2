"""Training curves over seeds: read them (run directories, CSV, JSONL), smooth each seed with a debiased
EMA, aggregate a group of seeds into its mean with a 95% t-interval band, and the interval of the
difference between two groups at every x (where it excludes 0, the groups differ).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from expkit.errors import InputError, UsageError

__all__ = [
    "X_KEYS",
    "Band",
    "Curve",
    "CurveSet",
    "CurveSummary",
    "DifferenceBand",
    "DifferenceSummary",
    "GroupSummary",
    "aggregate_band",
    "debiased_ema",
    "difference_band",
    "load_curves",
    "summarize_curve_set",
    "summarize_curves",
]

# --x name -> the fields that may hold it, first found wins; time is made relative to the first row
X_KEYS: dict[str, tuple[str, ...]] = {
    "step": ("step", "iter", "iteration"),
    "tokens": ("tokens", "tokens_seen", "n_tokens"),
    "time": ("elapsed_s", "time_s", "wall_s", "time"),
}
_RUN_COLUMNS = ("run", "run_id", "seed")
_MAX_GRID = 2_000


@dataclass(frozen=True)
class Curve:
    """One run's metric against x, sorted by x (each x once: a repeated x is refused when read)."""

    run: str
    group: str
    x: np.ndarray
    y: np.ndarray
    source: str
    repeated: int = 0  # x values logged more than once in a run directory (the last value is kept)


def _read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() in (".csv", ".tsv"):
        from expkit.data.csvfile import iter_csv_rows

        return list(iter_csv_rows(path))
    from expkit.data.jsonl import iter_jsonl_objects

    return list(iter_jsonl_objects(path))


MAX_CURVE_VALUE = 1e150
"""Largest |value| of a metric drawn over seeds: the bands square deviations and differences of values, which
overflow float64 past about 1e154 (``plot curves`` on +-1e308 was a traceback, issue 36)."""


def _number(value: Any, what: str, path: Path, line: int, *, limit: float = math.inf) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer past float64 (10**400)
        raise InputError(f"{what} {value!r} is not a number (or not one float64 holds)", path=path, line=line) from None
    if not math.isfinite(number):
        raise InputError(
            f"{what} {value!r} is not a finite number", path=path, line=line, hint="a diverged run? leave it out"
        )
    if abs(number) > limit:
        raise InputError(
            f"{what} {number:g} is too large to draw over seeds: bands overflow float64 past |{limit:g}|",
            path=path,
            line=line,
            hint="a diverged run? leave it out, or rescale the metric",
        )
    return number


def _lookup(mapping: dict[str, Any], dotted: str) -> Any:
    cur: Any = mapping
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _run_config(run_dir: Path) -> dict[str, Any]:
    import orjson

    for name, key in (("run.json", "config"), ("config.json", None)):
        p = run_dir / name
        if p.is_file():
            try:
                data = orjson.loads(p.read_bytes())
            except orjson.JSONDecodeError:
                continue
            cfg = data.get(key) if key else data
            if isinstance(cfg, dict):
                return cfg
    return {}


def _row_group(row: dict[str, Any], group_by: str | None, config: dict[str, Any] | None) -> tuple[str | None, bool]:
    """The group of a row and whether it came from the row itself (a column) rather than the run's config."""
    if group_by is None:
        g = row.get("group")
        return (None if g in (None, "") else str(g)), True
    if config is not None:
        g = _lookup(config, group_by.removeprefix("config."))
        if g is not None:
            return str(g), False
    g = row.get(group_by, row.get(group_by.removeprefix("config.")))
    return (None if g in (None, "") else str(g)), True


def _curves_from_rows(
    rows: list[tuple[int, dict[str, Any]]],
    *,
    path: Path,
    run: str,
    metric: str,
    x: str,
    group_by: str | None,
    config: dict[str, Any] | None,
    keep_last: bool = False,
) -> list[Curve]:
    """One curve per run of a file: a long-format file holds several runs, told apart by their group
    (``group`` or the ``group_by`` column) and their ``run``/``run_id``/``seed`` column, so two groups that
    reuse seed values stay two runs. Rows tagged with a ``rank`` other than 0 (per-rank metrics under
    torchrun) are left out: rank 0's rows are the run's curve. A (run, x) logged twice is refused, naming
    both lines, unless ``keep_last`` (a run directory is one run: a final ``evaluate()`` logs the last training
    step again): then the last value is kept and counted in ``Curve.repeated``."""
    keys = X_KEYS[x]
    by_run: dict[str, dict[float, float]] = {}
    line_of: dict[tuple[str, float], int] = {}
    groups: dict[str, str] = {}
    t0: dict[str, float] = {}
    repeats: dict[str, int] = {}
    for line, row in rows:
        if row.get(metric) in (None, ""):
            continue  # rows of other metrics (eval rows, lr rows) share the file
        if row.get("rank") not in (None, "", 0, "0"):
            continue  # torchrun: every rank logs the same steps; rank 0's rows are the run's curve
        xkey = next((k for k in keys if row.get(k) not in (None, "")), None)
        if xkey is None:
            raise InputError(
                f"a {metric!r} value without any of {', '.join(keys)} for x = {x}",
                path=path,
                line=line,
                hint="choose another x (step, tokens, time) or log the field",
            )
        g, from_row = _row_group(row, group_by, config)
        if g is None and group_by is not None:
            raise InputError(
                f"a row of run {run!r} has no value for the group key {group_by}",
                path=path,
                line=line,
                hint="name a config key of the run or a column of the file",
            )
        seed = next((f"{c}={row[c]}" for c in _RUN_COLUMNS if row.get(c) not in (None, "")), None)
        rid = ":".join(part for part in (run, g if from_row else None, seed) if part)
        xv = _number(row[xkey], xkey, path, line)
        if x == "time":
            xv -= t0.setdefault(rid, xv)
        yv = _number(row[metric], metric, path, line, limit=MAX_CURVE_VALUE)
        points = by_run.setdefault(rid, {})
        if xv in points and keep_last:
            repeats[rid] = repeats.get(rid, 0) + 1
        elif xv in points:
            raise InputError(
                f"run {rid!r} has {metric!r} at {xkey} {xv:g} twice (first on line {line_of[(rid, xv)]})",
                path=path,
                line=line,
                hint="give each run its own run/seed value within its group, "
                "or drop the repeated row (a resumed run logs some steps again)",
            )
        points[xv] = yv
        line_of[(rid, xv)] = line
        groups.setdefault(rid, "all" if g is None else g)
    out = []
    for rid, points in by_run.items():
        xs = np.array(sorted(points), dtype=np.float64)
        ys = np.array([points[v] for v in xs], dtype=np.float64)
        out.append(Curve(rid, groups[rid], xs, ys, str(path), repeated=repeats.get(rid, 0)))
    return out


def load_curves(
    sources: Sequence[str | Path],
    *,
    metric: str = "loss",
    x: str = "step",
    group_by: str | None = None,
    group_of: Mapping[str, str] | None = None,
) -> list[Curve]:
    """Curves of ``metric`` from run directories (``metrics.jsonl`` + ``run.json`` config) or files.

    A file is one run, unless it has a ``run``/``run_id``/``seed`` column, which splits it. The group
    of a run: its ``group_by`` value (``config.lr`` from the run's config, or a column), else a
    ``group`` column, else ``group_of[run directory name]`` (the label of its config, so two learning rates are
    never averaged as seeds), else ``all``. A run directory's step logged twice keeps its last value (counted
    in ``Curve.repeated``; ``summarize_curves`` notes it). In a long-format file a run is keyed by its group and its
    run/seed value together (``seeds.csv:lr=0.1:seed=0``), so groups that reuse seeds do not merge.

    Raises:
        InputError: a missing file, a row with a non-number, no rows with the metric at all, the same
            x twice in one run (both lines named), a file that is not UTF-8.
        UsageError: an unknown ``x``.
    """
    if x not in X_KEYS:
        raise UsageError(f"x {x!r} is not known", hint=f"use one of {', '.join(X_KEYS)}")
    if not sources:
        raise UsageError("no runs or files given", hint="pass run IDs, run directories or CSV/JSONL files")
    curves: list[Curve] = []
    for src in sources:
        p = Path(src)
        if p.is_dir():
            mfile = p / "metrics.jsonl"
            if not mfile.is_file():
                raise InputError("run directory has no metrics.jsonl", path=p)
            if not mfile.resolve().is_relative_to(p.resolve()):  # a store from elsewhere must not read /etc/...
                raise InputError(
                    "metrics.jsonl is a link that leaves its run directory; not followed",
                    path=mfile,
                    hint="a run's records live inside its folder: copy the file in instead of linking it",
                )
            found = _curves_from_rows(
                _read_rows(mfile),
                path=mfile,
                run=p.name,
                metric=metric,
                x=x,
                group_by=group_by,
                config=_run_config(p),
                keep_last=True,
            )
            if group_by is None and group_of and p.name in group_of:
                found = [replace(c, group=group_of[p.name]) if c.group == "all" else c for c in found]
            curves += found
        elif p.is_file():
            curves += _curves_from_rows(
                _read_rows(p), path=p, run=p.stem, metric=metric, x=x, group_by=group_by, config=None
            )
        else:
            raise InputError("no such file or run directory", path=p)
    if not curves:
        raise InputError(
            f"no rows with metric {metric!r} in {', '.join(map(str, sources))}",
            hint="check the metric name against the field names in the files",
        )
    return curves


def debiased_ema(y: np.ndarray, alpha: float) -> np.ndarray:
    """Exponential moving average with Adam-style bias correction, as TensorBoard's smoothing:
    m_t = alpha m_{t-1} + (1 - alpha) y_t, m_0 = 0; returns m_t / (1 - alpha^t) (Kingma & Ba 2015, sec. 3).

    Example:
        >>> debiased_ema(np.array([1.0, 1.0, 1.0]), 0.9).tolist()   # no pull towards 0 at the start
        [1.0, 1.0, 1.0]
    """
    if not 0.0 <= alpha < 1.0:
        raise UsageError(f"ema {alpha} must be in [0, 1)", hint="0.9 is a common choice; 0 disables it")
    out = np.empty_like(y, dtype=np.float64)
    m = 0.0
    for t, v in enumerate(y, start=1):
        m = alpha * m + (1.0 - alpha) * v
        out[t - 1] = m / (1.0 - alpha**t)
    return out


@dataclass(frozen=True)
class Band:
    """A group of seeds on a common x grid: mean and its t-interval (None without >= 2 seeds)."""

    group: str
    runs: tuple[str, ...]
    n_seeds: int
    x: np.ndarray
    ys: np.ndarray  # (n_seeds, len(x)) after smoothing and alignment
    mean: np.ndarray
    low: np.ndarray | None
    high: np.ndarray | None
    level: float


def _common_grid(curves: Sequence[Curve]) -> np.ndarray:
    common = curves[0].x
    for c in curves[1:]:
        common = np.intersect1d(common, c.x)
    smallest = min(c.x.size for c in curves)
    if common.size >= max(2, smallest // 2):
        return common
    lo, hi = max(c.x[0] for c in curves), min(c.x[-1] for c in curves)
    if not lo < hi:
        raise UsageError(
            f"the runs {', '.join(c.run for c in curves)} share no x range", hint="compare runs that overlap"
        )
    grid = np.unique(np.concatenate([c.x[(c.x >= lo) & (c.x <= hi)] for c in curves]))
    if grid.size > _MAX_GRID:
        grid = grid[np.linspace(0, grid.size - 1, _MAX_GRID).astype(int)]
    return grid


def _on_grid(c: Curve, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(c.x, grid)
    exact = (idx < c.x.size) & (c.x[np.minimum(idx, c.x.size - 1)] == grid)
    if exact.all():
        return y[idx]
    return np.interp(grid, c.x, y)


def _t_quantile(level: float, df: np.ndarray | float) -> np.ndarray:
    from scipy.stats import t

    return t.isf((1.0 - level) / 2.0, df)  # finite for a level just below 1 (0.5 + level / 2 rounds to 1.0)


def aggregate_band(
    curves: Sequence[Curve], *, ema: float | None = None, level: float = 0.95, grid: np.ndarray | None = None
) -> Band:
    """Mean over the seeds of one group with a t-interval (n - 1 df) at each x; EMA per seed first."""
    if not curves:
        raise UsageError("a group with no runs")
    grid = _common_grid(curves) if grid is None else grid
    ys = np.stack([_on_grid(c, debiased_ema(c.y, ema) if ema else c.y, grid) for c in curves])  # (S, X)
    n = ys.shape[0]
    mean = ys.mean(axis=0)
    low = high = None
    if n >= 2:
        h = _t_quantile(level, n - 1) * ys.std(axis=0, ddof=1) / math.sqrt(n)
        low, high = mean - h, mean + h
    return Band(curves[0].group, tuple(c.run for c in curves), n, grid, ys, mean, low, high, level)


@dataclass(frozen=True)
class DifferenceBand:
    """mean(A) - mean(B) at each shared x with its Welch interval. ``excludes_zero``: x where the
    interval of the difference excludes 0; ``bands_overlap``: x where the two groups' own bands overlap
    (the "bands do not overlap" rule; stricter than the interval of the difference)."""

    group_a: str
    group_b: str
    x: np.ndarray
    delta: np.ndarray
    low: np.ndarray
    high: np.ndarray
    excludes_zero: np.ndarray
    bands_overlap: np.ndarray
    level: float


def difference_band(
    a: Sequence[Curve], b: Sequence[Curve], *, ema: float | None = None, level: float = 0.95
) -> DifferenceBand:
    """Welch interval of mean(A) - mean(B) at every x both groups share (Welch 1947).

    Raises:
        UsageError: a group with fewer than 2 seeds (no spread, no interval).
    """
    if len(a) < 2 or len(b) < 2:
        raise UsageError(
            f"the difference needs >= 2 seeds per group (got {len(a)} and {len(b)})", hint="run more seeds"
        )
    grid = _common_grid([*a, *b])
    ba = aggregate_band(a, ema=ema, level=level, grid=grid)
    bb = aggregate_band(b, ema=ema, level=level, grid=grid)
    va = ba.ys.var(axis=0, ddof=1) / ba.n_seeds
    vb = bb.ys.var(axis=0, ddof=1) / bb.n_seeds
    se = np.sqrt(va + vb)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (va + vb) ** 2 / (va**2 / (ba.n_seeds - 1) + vb**2 / (bb.n_seeds - 1))
    df = np.where(np.isfinite(df), df, ba.n_seeds + bb.n_seeds - 2)
    h = _t_quantile(level, df) * se
    delta = ba.mean - bb.mean
    low, high = delta - h, delta + h
    assert ba.low is not None and ba.high is not None and bb.low is not None and bb.high is not None
    overlap = (ba.low <= bb.high) & (bb.low <= ba.high)
    return DifferenceBand(ba.group, bb.group, grid, delta, low, high, (low > 0) | (high < 0), overlap, level)


@dataclass(frozen=True)
class CurveSet:
    """Everything ``expkit plot curves`` draws: the runs, a band per group, and the difference of the
    first two groups (or those named) when both have >= 2 seeds."""

    metric: str
    x_key: str
    ema: float | None
    curves: tuple[Curve, ...]
    bands: tuple[Band, ...]
    difference: DifferenceBand | None
    notes: tuple[str, ...]


def summarize_curves(
    curves: Sequence[Curve],
    *,
    metric: str,
    x_key: str,
    ema: float | None = None,
    level: float = 0.95,
    compare: tuple[str, str] | None = None,
) -> CurveSet:
    """Group ``curves``, band each group, and take the difference of two groups.

    Raises:
        UsageError: ``compare`` names a group that does not exist.
    """
    groups: dict[str, list[Curve]] = {}
    for c in curves:
        groups.setdefault(c.group, []).append(c)
    bands = tuple(aggregate_band(g, ema=ema, level=level) for g in groups.values())
    notes = [f"{b.group}: 1 seed, no band (run >= 2 seeds)" for b in bands if b.n_seeds < 2]
    notes += [
        f"{c.run}: {c.repeated} step(s) logged twice; the last value of each is drawn" for c in curves if c.repeated
    ]
    diff = None
    names = list(groups)
    pair: tuple[str, str] | None
    if compare is not None:
        for g in compare:
            if g not in groups:
                raise UsageError(f"the difference names group {g!r}, not among {', '.join(names)}")
        pair = compare
    else:
        pair = (names[0], names[1]) if len(names) >= 2 else None
    if pair is not None:
        ga, gb = groups[pair[0]], groups[pair[1]]
        if len(ga) >= 2 and len(gb) >= 2:
            diff = difference_band(ga, gb, ema=ema, level=level)
        else:
            notes.append(f"no difference panel: {pair[0]} has {len(ga)} and {pair[1]} {len(gb)} seeds (need >= 2 each)")
    if len(names) > 2 and compare is None:
        notes.append(f"difference panel shows {names[0]} - {names[1]}; choose two others to compare")
    return CurveSet(metric, x_key, ema, tuple(curves), bands, diff, tuple(notes))


@dataclass(frozen=True)
class GroupSummary:
    """One group's band at its last x: seeds, runs, the final mean and its interval (None with one seed)."""

    group: str
    n_seeds: int
    runs: tuple[str, ...]
    final_x: float
    final_mean: float
    final_low: float | None
    final_high: float | None


@dataclass(frozen=True)
class DifferenceSummary:
    """The difference panel in numbers: at how many of ``n_points`` x the interval of A - B excludes 0
    (and which x), at how many the groups' own bands do not overlap, and the final delta with its interval."""

    groups: str
    n_points: int
    n_excludes_zero: int
    n_bands_apart: int
    x_excludes_zero: tuple[float, ...]
    final_delta: float
    final_low: float
    final_high: float


@dataclass(frozen=True)
class CurveSummary:
    """What ``expkit plot curves`` reports beside its figure (``figure``: the file written)."""

    metric: str
    x: str
    ema: float | None
    groups: tuple[GroupSummary, ...]
    difference: DifferenceSummary | None
    notes: tuple[str, ...]
    figure: str


def summarize_curve_set(cs: CurveSet, figure: str | Path) -> CurveSummary:
    """The final point of every band and the difference panel's counts, for the figure at ``figure``."""
    groups = tuple(
        GroupSummary(
            group=b.group,
            n_seeds=b.n_seeds,
            runs=tuple(b.runs),
            final_x=float(b.x[-1]),
            final_mean=float(b.mean[-1]),
            final_low=None if b.low is None else float(b.low[-1]),
            final_high=None if b.high is None else float(b.high[-1]),
        )
        for b in cs.bands
    )
    d = cs.difference
    diff = None
    if d is not None:
        diff = DifferenceSummary(
            groups=f"{d.group_a} - {d.group_b}",
            n_points=int(d.x.size),
            n_excludes_zero=int(d.excludes_zero.sum()),
            n_bands_apart=int((~d.bands_overlap).sum()),
            x_excludes_zero=tuple(float(v) for v in d.x[d.excludes_zero]),
            final_delta=float(d.delta[-1]),
            final_low=float(d.low[-1]),
            final_high=float(d.high[-1]),
        )
    return CurveSummary(cs.metric, cs.x_key, cs.ema, groups, diff, cs.notes, str(figure))
