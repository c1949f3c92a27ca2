"""``compare_groups``: is B better than A? Per metric, the difference of the final values over seeds with its
interval (paired by seed when both sides ran the same seeds, Welch otherwise), the seed-to-seed spread it
has to beat, and a verdict: ``better``, ``worse`` or ``inconclusive (need ~N seeds)``.

The number of seeds is a power estimate (Cohen 1988, ch. 2; the noncentral t): the seeds per side at
which a two-sided t-test at the same level finds the *measured* difference with 80% power, given the
measured spread. It is a planning figure, not a promise: the measured difference is itself noisy.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from expkit.errors import UsageError
from expkit.runs.runrecord import RunRecord
from expkit.runs.store import list_runs, read_record, resolve_store

__all__ = [
    "AgainstBest",
    "BestComparison",
    "Comparison",
    "MetricComparison",
    "Side",
    "compare_by",
    "compare_groups",
    "config_value",
    "curve_set_of",
    "is_loss_like",
    "is_objective_like",
    "seeds_needed",
]

TARGET_POWER = 0.8
MAX_SEEDS = 10_000
_LOSS_LIKE = re.compile(
    r"(loss|err|error|ppl|perplexity|nll|bpb|bpc|wer|cer|latency|time|_s$|_ms$|_bytes$)", re.IGNORECASE
)
_NOT_METRICS = {"step", "time", "epoch", "tokens"}
# names that read as what a run is trying to get better at; anything else (lr, grad_norm, throughput ...) is
# listed beside them without a verdict unless named with ``metrics=`` (issue 21 item 7)
_OBJECTIVE_LIKE = re.compile(
    r"(loss|acc|accuracy|reward|return|perplexity|ppl|nll|bpb|bpc|err|error|wer|cer|f1|bleu|rouge|"
    r"exact_match|\bem\b|auc|auroc|precision|recall|score|pass@|win_rate|mse|mae|rmse|likelihood)",
    re.IGNORECASE,
)
NOT_JUDGED = "not judged: not an objective by its name (name it with --metric to judge it)"
NO_SEED_EFFECT = "no verdict: the seeds had no effect"
# Seed-to-seed spreads at or under this fraction of the values' size are numerical noise (unordered GPU
# reductions, threads summing in another order: ~1e-9 relative in float64, ~1e-7 in float32), not a seed effect.
SEED_NOISE_REL = 1e-7


def is_objective_like(metric: str) -> bool:
    """Whether a metric reads as an objective (loss, accuracy, reward, perplexity, error, F1, BLEU, score
    ...) and is judged by default; ``lr``, ``grad_norm``, ``tokens_per_s`` are not.

    Example:
        >>> [m for m in ["val_loss", "lr", "grad_norm", "accuracy", "reward_mean"] if is_objective_like(m)]
        ['val_loss', 'accuracy', 'reward_mean']
    """
    return bool(_OBJECTIVE_LIKE.search(metric))


def is_loss_like(metric: str) -> bool:
    """Whether lower is better by default: names with loss, error, ppl, nll, bpb, time, latency, a _s suffix."""
    return bool(_LOSS_LIKE.search(metric))


def seeds_needed(
    delta: float, sd: float, *, paired: bool, level: float = 0.95, power: float = TARGET_POWER
) -> int | None:
    """Seeds per side for a two-sided t-test at ``level`` to find ``delta`` with ``power``.

    Paired (sd of the per-seed differences): df = n - 1, noncentrality delta / (sd / sqrt(n)).
    Unpaired (common sd of one side): df = 2(n - 1), noncentrality delta / (sd sqrt(2 / n)).
    None when delta is 0 or sd is 0 (nothing to find, or no noise); MAX_SEEDS + 1 past the cap.

    Example:
        >>> seeds_needed(1.0, 1.0, paired=False)   # R: power.t.test(delta=1, sd=1, power=.8)$n = 16.71
        17
    """
    from scipy.stats import nct, t

    if delta == 0 or sd == 0 or not math.isfinite(delta) or not math.isfinite(sd):
        return None
    alpha = 1.0 - level

    def achieved(n: int) -> float:
        df = n - 1 if paired else 2 * (n - 1)
        ncp = abs(delta) / (sd / math.sqrt(n) if paired else sd * math.sqrt(2.0 / n))
        crit = t.ppf(1 - alpha / 2, df)
        return float(nct.sf(crit, df, ncp) + nct.cdf(-crit, df, ncp))

    # Power grows with n: double n until it is reached, then bisect (about 2 log2 n evaluations instead of
    # one per seed). Doubling keeps the noncentrality near where the answer lies: scipy's nct loses
    # accuracy far beyond it (at n = 5,000 for delta = sd it returns a power below 0.8).
    hi = 2
    while achieved(hi) < power:
        if hi >= MAX_SEEDS:
            return MAX_SEEDS + 1
        hi = min(2 * hi, MAX_SEEDS)
    lo = max(2, hi // 2)
    while lo < hi:
        mid = (lo + hi) // 2
        if achieved(mid) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its label and its finished runs (id, seed)."""

    label: str
    run_ids: tuple[str, ...]
    seeds: tuple[int | None, ...]


@dataclass(frozen=True)
class MetricComparison:
    """B - A for one metric over the final values of each run. ``method``: ``paired`` (by seed) or
    ``welch``. ``seed_sd``: the seed-to-seed standard deviation within a side (pooled over both);
    ``noise_floor``: the smallest difference these seeds resolve (half-width of the interval of B - A);
    ``stored_floor``: the seed std that ``expkit runs determinism`` stored for group A, if any."""

    metric: str
    lower_is_better: bool
    direction_source: str
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    delta: float
    low: float
    high: float
    level: float
    p_value: float
    method: str
    seed_sd: float
    noise_floor: float
    stored_floor: float | None
    verdict: str
    seeds_needed: int | None
    left_out: int
    judged: bool = True


@dataclass(frozen=True)
class Comparison:
    """B against A per metric. ``curves`` is the figure of both sides' curves once one was drawn
    (``render.sweep.draw_comparison_curves``), else None."""

    a: Side
    b: Side
    store: str
    split: str
    metrics: tuple[MetricComparison, ...]
    notes: tuple[str, ...]
    curves: str | None = None


@dataclass(frozen=True)
class _GroupRuns:
    """A group's finished runs of the configs that were not stopped early, and a line per stopped config."""

    runs: list[RunRecord]
    stopped: dict[str, str]


def _runs_of_group(root: Path, group: str) -> _GroupRuns:
    """Finished runs only; a config that ``expkit sweep --early-stop`` stopped is left out whole (its runs that
    had finished before the stop too: they would make its side look complete), and named."""
    runs: list[RunRecord] = []
    stopped: dict[str, str] = {}
    for r in list_runs(root, where=[f"group={group}"]).runs:
        if r.status not in ("finished", "stopped"):
            continue
        rec = read_record(root / r.id)
        stop = rec.extra.get("early_stop") or {}
        if stop.get("stop"):
            policy = stop.get("policy") or {}
            judged = f"log({policy.get('metric')})" if policy.get("log_scale") else policy.get("metric")
            stopped.setdefault(
                str(stop.get("config")),
                f"at rung {stop.get('rung'):g}: {judged} minus leader {stop.get('leader')} in "
                f"[{stop.get('low'):.4g}, {stop.get('high'):.4g}], {stop.get('reason')}",
            )
        elif r.status == "finished":
            runs.append(rec)
    _refuse_duplicates(group, runs)
    return _GroupRuns(runs, stopped)


def _refuse_duplicates(group: str, runs: list[RunRecord]) -> None:
    """Two finished runs of one (config, seed) are one seed run twice (a sweep resumed after its driver was
    killed, on a backend that kept running its trials), not two seeds: refuse, naming them."""
    import orjson

    seen: dict[tuple[bytes, int | None], list[str]] = {}
    for rec in runs:
        key = (orjson.dumps(_config_of(rec), option=orjson.OPT_SORT_KEYS), _seed_of(rec))
        seen.setdefault(key, []).append(rec.id)
    dups = [(k, ids) for k, ids in seen.items() if len(ids) > 1 and k[1] is not None]
    if dups:
        (config, seed), ids = dups[0]
        raise UsageError(
            f"group {group!r} has {len(ids)} finished runs of config {config.decode()} seed {seed}: "
            f"{', '.join(sorted(ids))}"
            + (f" (and {len(dups) - 1} more such (config, seed))" if len(dups) > 1 else "")
            + "; they are one seed run twice, not two seeds",
            hint="keep one run of each (config, seed): move the others out of the group or the store",
        )


def _stopped_note(group: str, stopped: dict[str, str]) -> str:
    return f"stopped early in group {group}, not compared: " + "; ".join(f"{c} ({w})" for c, w in stopped.items())


def _config_of(rec: RunRecord) -> dict[str, Any]:
    """The run's config with the sweep trial's own keys on top: a command that records its own config
    (``expkit train charlm`` attaches to the run) replaces ``config``, and nests its keys."""
    sweep = rec.extra.get("sweep") or {}
    return {**(rec.config or {}), **(sweep.get("config") or {})}


def config_value(config: dict[str, Any], key: str) -> tuple[bool, Any]:
    """``(True, value)`` of ``key`` in a run's config, else ``(False, None)``. ``key`` is a top-level key
    (``lr``), the same with the ``config.`` prefix ``runs ls --where`` takes (``config.lr``), or a dotted
    path into nested sections (``training_args.learning_rate``).

    Example:
        >>> config_value({"lr": 0.1, "opt": {"beta": 0.9}}, "config.opt.beta")
        (True, 0.9)
    """
    for name in dict.fromkeys((key, key.removeprefix("config."))):
        if name in config:
            return True, config[name]
        node: Any = config
        for part in name.split("."):
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            return True, node
    return False, None


def _seed_of(rec: RunRecord) -> int | None:
    return rec.seed.seed if rec.seed is not None else None


def _by_seed(runs: list[RunRecord]) -> list[RunRecord]:
    return sorted(runs, key=lambda r: _seed_of(r) or 0)


def _value_text(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


_SideRuns = tuple[str, list[RunRecord]]


def _split_all(root: Path, group: str, of_group: _GroupRuns, by: str) -> list[_SideRuns]:
    """The group's finished runs by the value of config key ``by``, one side per value (sorted when the
    values sort), labelled ``key=value``."""
    runs = of_group.runs
    if not runs:
        raise UsageError(f"group {group!r} has no finished runs in {root}", hint="list them with `expkit runs ls`")
    by_value: dict[Any, list[RunRecord]] = {}
    key = by.removeprefix("config.")
    for rec in runs:
        cfg = _config_of(rec)
        found, value = config_value(cfg, by)
        if not found:
            raise UsageError(
                f"run {rec.id} of group {group!r} has no config key {by!r}",
                hint=f"its keys: {', '.join(sorted(cfg)) or 'none'}",
            )
        by_value.setdefault(value, []).append(rec)
    try:
        keys = sorted(by_value)
    except TypeError:
        keys = list(by_value)
    return [(f"{key}={_value_text(k)}", by_value[k]) for k in keys]


def _split(root: Path, group: str, of_group: _GroupRuns, by: str) -> tuple[_SideRuns, _SideRuns]:
    sides = _split_all(root, group, of_group, by)
    if len(sides) != 2:
        raise UsageError(
            f"by={by.removeprefix('config.')!r} splits group {group!r} into {len(sides)} values "
            f"({', '.join(label.partition('=')[2] for label, _ in sides)}); compare needs exactly 2"
            + (f"; {_stopped_note(group, of_group.stopped)}" if of_group.stopped else ""),
            hint="compare two groups instead, or sweep two values of the key"
            + (" (compare_by / `expkit compare GROUP --by KEY` gives every value against the best)" if sides else ""),
        )
    return sides[0], sides[1]


class _Sides(NamedTuple):
    a: _SideRuns
    b: _SideRuns
    split: str
    notes: list[str]


def _sides(root: Path, a: str, b: str | None, by: str | None) -> _Sides:
    """The runs of both sides (two groups, or one group split by config key ``by``), what the split is, and
    a note per group with configs stopped early (left out)."""
    if by is not None:
        found_a = _runs_of_group(root, a)
        side_a, side_b = _split(root, a, found_a, by)
        stopped = {a: found_a.stopped}
        split = f"group {a} split by config key {by}"
    else:
        assert b is not None
        found = {a: _runs_of_group(root, a), b: _runs_of_group(root, b)}
        for g, rs in found.items():
            if not rs.runs:
                raise UsageError(
                    f"group {g!r} has no finished runs in {root}"
                    + (f" ({_stopped_note(g, rs.stopped)})" if rs.stopped else ""),
                    hint="list them with `expkit runs ls`",
                )
        side_a, side_b = (a, found[a].runs), (b, found[b].runs)
        stopped = {g: rs.stopped for g, rs in found.items()}
        split = f"groups {a} and {b}"
    return _Sides(side_a, side_b, split, [_stopped_note(g, st) for g, st in stopped.items() if st])


def _side(label: str, runs: list[RunRecord]) -> Side:
    runs = _by_seed(runs)
    return Side(label, tuple(r.id for r in runs), tuple(_seed_of(r) for r in runs))


def _pairable(a: Side, b: Side) -> bool:
    return (
        None not in a.seeds and len(set(a.seeds)) == len(a.seeds) == len(b.seeds) >= 2 and set(a.seeds) == set(b.seeds)
    )


def _compare_metric(
    metric: str,
    va: dict[Any, float],
    vb: dict[Any, float],
    *,
    paired: bool,
    level: float,
    lower_is_better: bool,
    direction_source: str,
    stored_floor: float | None,
) -> MetricComparison:
    from scipy.stats import t as t_dist

    from expkit.stats.seeds import t_interval, welch_interval

    keys_a = [k for k, v in va.items() if math.isfinite(v)]
    keys_b = [k for k, v in vb.items() if math.isfinite(v)]
    left_out = len(va) + len(vb) - len(keys_a) - len(keys_b)
    if paired:
        common = sorted(set(keys_a) & set(keys_b))
        keys_a = keys_b = common
        paired = len(common) >= 2
    a = np.array([va[k] for k in keys_a], dtype=np.float64)
    b = np.array([vb[k] for k in keys_b], dtype=np.float64)
    if a.size < 2 or b.size < 2:
        raise UsageError(
            f"metric {metric!r} has {a.size} and {b.size} finite values; need >= 2 per side",
            hint="run more seeds per side",
        )
    sd = math.sqrt((a.var(ddof=1) * (a.size - 1) + b.var(ddof=1) * (b.size - 1)) / (a.size + b.size - 2))
    if paired:
        d = b - a
        iv = t_interval(d, level=level)
        sd_d = float(d.std(ddof=1))
        method, n_sd = "paired", sd_d
    else:
        iv = welch_interval(b, a, level=level)
        method, n_sd = "welch", sd
    delta = iv.estimate
    # no spread at all: any difference is exact
    p = float(2 * t_dist.sf(abs(delta) / iv.std_error, iv.df)) if iv.std_error > 0 else float(delta == 0)
    if iv.excludes_zero:
        improved = (delta < 0) == lower_is_better
        verdict, n_needed = ("better" if improved else "worse"), None
    else:
        n_needed = seeds_needed(delta, n_sd, paired=paired, level=level)
        verdict = (
            "inconclusive (no difference measured)"
            if n_needed is None
            else f"inconclusive (need ~{n_needed} seeds)"
            if n_needed <= MAX_SEEDS
            else f"inconclusive (need > {MAX_SEEDS} seeds)"
        )
    return MetricComparison(
        metric,
        lower_is_better,
        direction_source,
        int(a.size),
        int(b.size),
        float(a.mean()),
        float(b.mean()),
        delta,
        iv.low,
        iv.high,
        level,
        p,
        method,
        sd,
        (iv.high - iv.low) / 2,
        stored_floor,
        verdict,
        n_needed,
        left_out,
    )


def _choose_metrics(shared: set[str], named: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The metrics to judge and those only listed: the ``named`` ones (every one must be shared), or by
    default the shared ones that look like objectives, the others listed."""
    for m in named:
        if m not in shared:
            raise UsageError(
                f"metric {m!r} is not a final metric of every run compared",
                hint=f"shared metrics: {', '.join(sorted(shared)) or 'none'}",
            )
    if not shared:
        raise UsageError("the runs share no numeric final metric", hint="log metrics as JSON lines with a step")
    if named:
        return tuple(dict.fromkeys(named)), ()
    judged = tuple(m for m in sorted(shared) if is_objective_like(m))
    return judged, tuple(m for m in sorted(shared) if m not in judged)


def _seeds_had_no_effect(side: Side, finals: list[dict[str, float]], metric: str, stored: float | None) -> bool:
    """Whether two or more distinct seeds of one side all ended within numerical noise of each other on
    ``metric`` (a command that never used its seed: the same run repeated, not a sample of seeds). The noise:
    SEED_NOISE_REL of the values' size, or ``stored`` (twice the difference between two runs of one seed that
    ``expkit runs determinism`` stored for the group), whichever is larger; exact equality missed float jitter
    (issue 34 item 4)."""
    seeds = {s for s in side.seeds if s is not None}
    values = [f[metric] for f in finals if math.isfinite(f[metric])]
    if len(seeds) < 2 or len(values) < 2:
        return False
    floor = max(SEED_NOISE_REL * max(abs(v) for v in values), stored or 0.0)
    return max(values) - min(values) <= floor


def _repeat_floor(root: Path, group: str) -> dict[str, float]:
    """Metric -> the largest difference between two runs of one seed that ``expkit runs determinism`` stored
    for ``group`` (its nondeterminism: the floor under which seeds cannot be told from jitter); {} when none."""
    import orjson

    from expkit.runs.store import validate_name

    path = root / "groups" / f"{validate_name(group, what='group name')}.json"
    if not path.exists():
        return {}
    found = orjson.loads(path.read_bytes()).get("repeat_max_abs_diff") or {}
    return {str(k): float(v) for k, v in found.items() if isinstance(v, (int, float)) and math.isfinite(v)}


def compare_groups(
    a: str,
    b: str | None = None,
    *,
    by: str | None = None,
    store: str | os.PathLike[str] | None = None,
    metrics: tuple[str, ...] = (),
    lower_is_better: bool | None = None,
    level: float = 0.95,
) -> Comparison:
    """Compare group ``b`` with group ``a`` (or the two values of config key ``by`` within group ``a``).

    Args:
        a, b: run groups (``expkit sweep --name``); ``b`` None with ``by``.
        by: a config key that splits group ``a`` into exactly two sides (sorted: the smaller value is A).
        metrics: the metrics to judge. Default: the numeric final metrics all runs share that look like
            objectives (``is_objective_like``: loss, accuracy, reward, perplexity ...); the other shared
            ones (lr, grad_norm ...) are listed with their numbers and ``judged=False``, no verdict. A metric
            whose final value is the same for every seed of a side gets no verdict either (the seeds had
            no effect; a note says so).
        lower_is_better: direction for every metric; None: lower for loss-like names (``is_loss_like``).
        level: of the intervals.

    Returns:
        Comparison with one MetricComparison per metric; ``better`` means B is better than A.

    Raises:
        UsageError: a group without finished runs, a split into other than two values, an unknown metric,
            fewer than 2 finite values on a side.
    """
    from expkit.runs.determinism import read_noise_floor

    root = resolve_store(store)
    if (b is None) == (by is None):
        raise UsageError("compare two groups (a and b) or one group split by a config key (by)")
    (la, runs_a), (lb, runs_b), split, notes = _sides(root, a, b, by)
    side_a, side_b = _side(la, runs_a), _side(lb, runs_b)
    paired = _pairable(side_a, side_b)
    if not paired:
        notes.append("Welch (unpaired): the two sides did not run the same set of distinct seeds")
    else:
        common_seeds = sorted(s for s in side_a.seeds if s is not None)
        notes.append(f"paired by seed: both sides ran seeds {', '.join(map(str, common_seeds))}")

    fa = [_numeric(r) for r in _by_seed(runs_a)]
    fb = [_numeric(r) for r in _by_seed(runs_b)]
    shared = set.intersection(*(set(f) for f in fa + fb))
    judged, listed = _choose_metrics(shared, metrics)
    if not judged:
        notes.append("no shared metric looks like an objective (loss, accuracy, reward ...): name one with --metric")
    stored = read_noise_floor(root, a) if by is None else None
    repeat = _repeat_floor(root, a)
    out = []
    for m in (*judged, *listed):
        if lower_is_better is None:
            lower = is_loss_like(m)
            source = "default: " + ("loss-like name" if lower else "not a loss-like name")
        else:
            lower, source = lower_is_better, "as given"
        keys_a = side_a.seeds if paired else tuple(range(len(fa)))
        keys_b = side_b.seeds if paired else tuple(range(len(fb)))
        try:
            mc = _compare_metric(
                m,
                dict(zip(keys_a, (f[m] for f in fa), strict=True)),
                dict(zip(keys_b, (f[m] for f in fb), strict=True)),
                paired=paired,
                level=level,
                lower_is_better=lower,
                direction_source=source,
                stored_floor=None if stored is None else stored.get(m),
            )
        except UsageError:
            if m in judged:
                raise
            continue  # a metric only listed, without two finite values a side: nothing to list
        floor = 2 * repeat[m] if m in repeat else None
        unmoved = [side.label for side, fs in ((side_a, fa), (side_b, fb)) if _seeds_had_no_effect(side, fs, m, floor)]
        if m in listed:
            mc = replace(mc, verdict=NOT_JUDGED, judged=False, seeds_needed=None)
        elif unmoved:
            mc = replace(mc, verdict=NO_SEED_EFFECT, judged=False, seeds_needed=None)
            notes.append(
                f"{m}: every seed of {' and of '.join(unmoved)} gave the same final value (within numerical noise: "
                f"{SEED_NOISE_REL:g} relative"
                + (f" or twice the same-seed difference {floor:.3g} `runs determinism` stored" if floor else "")
                + "), so the seeds had no "
                "effect (the command ignores EXPKIT_SEED? pass {seed} in the command or seed from it): the "
                "interval is not a seed-to-seed spread and no verdict is given"
            )
        out.append(mc)
    return Comparison(side_a, side_b, str(root), split, tuple(out), tuple(notes))


@dataclass(frozen=True)
class AgainstBest:
    """One value of the split key against the best one for one metric: ``comparison`` has A = the best
    (``best``), B = this one (``other``); ``p_holm`` is its p-value adjusted by Holm over the family of every
    value against the best for this metric; ``verdict``: ``worse than the best`` when ``p_holm`` is under
    1 - level (and B is on the worse side), else ``not told apart from the best``."""

    metric: str
    best: str
    other: str
    comparison: MetricComparison
    p_holm: float
    verdict: str


@dataclass(frozen=True)
class BestComparison:
    """Group ``group`` split by config key ``by`` into three or more values: per judged metric, every value
    against the best (the best mean), Holm over the comparisons of each metric."""

    group: str
    by: str
    store: str
    sides: tuple[Side, ...]
    rows: tuple[AgainstBest, ...]
    notes: tuple[str, ...]


def compare_by(
    a: str,
    by: str,
    *,
    store: str | os.PathLike[str] | None = None,
    metrics: tuple[str, ...] = (),
    lower_is_better: bool | None = None,
    level: float = 0.95,
) -> Comparison | BestComparison:
    """Group ``a`` split by config key ``by``: two values -> ``compare_groups`` (B against A); three or more ->
    every value against the best one per metric, with Holm's correction over those comparisons (a 3 x 3
    sweep gets its verdict in one call).

    Example:
        >>> compare_by("lr", "lr", metrics=("loss",))  # doctest: +SKIP
    """
    from expkit.stats.multiplicity import holm_adjust

    root = resolve_store(store)
    of_group = _runs_of_group(root, a)
    sides = _split_all(root, a, of_group, by)
    if len(sides) <= 2:
        return compare_groups(a, by=by, store=store, metrics=metrics, lower_is_better=lower_is_better, level=level)
    notes = [_stopped_note(a, of_group.stopped)] if of_group.stopped else []
    finals = {label: [_numeric(r) for r in _by_seed(runs)] for label, runs in sides}
    side_of = {label: _side(label, runs) for label, runs in sides}
    shared = set.intersection(*(set(f) for fs in finals.values() for f in fs))
    judged, _ = _choose_metrics(shared, metrics)
    if not judged:
        notes.append("no shared metric looks like an objective (loss, accuracy, reward ...): name one with --metric")
    repeat = _repeat_floor(root, a)
    rows: list[AgainstBest] = []
    for m in judged:
        lower = is_loss_like(m) if lower_is_better is None else lower_is_better
        source = (
            ("default: " + ("loss-like name" if lower else "not a loss-like name"))
            if lower_is_better is None
            else "as given"
        )
        sign = 1.0 if lower else -1.0
        best = min(finals, key=lambda lab: sign * float(np.mean([f[m] for f in finals[lab]])))
        pairs = []
        for label in finals:
            if label == best:
                continue
            paired = _pairable(side_of[best], side_of[label])
            ka = side_of[best].seeds if paired else tuple(range(len(finals[best])))
            kb = side_of[label].seeds if paired else tuple(range(len(finals[label])))
            mc = _compare_metric(
                m,
                dict(zip(ka, (f[m] for f in finals[best]), strict=True)),
                dict(zip(kb, (f[m] for f in finals[label]), strict=True)),
                paired=paired, level=level, lower_is_better=lower, direction_source=source, stored_floor=None,
            )  # fmt: skip
            pairs.append((label, mc))
        unmoved = [lab for lab in finals if _seeds_had_no_effect(side_of[lab], finals[lab], m, 2 * repeat.get(m, 0.0))]
        if unmoved:
            notes.append(f"{m}: every seed of {', '.join(unmoved)} gave the same final value: no verdicts on {m}")
        adjusted = holm_adjust([mc.p_value for _, mc in pairs])
        for (label, mc), p_holm in zip(pairs, adjusted, strict=True):
            worse = p_holm < 1 - level and (mc.delta > 0) == lower
            verdict = NO_SEED_EFFECT if unmoved else "worse than the best" if worse else "not told apart from the best"
            rows.append(AgainstBest(m, best, label, mc, float(p_holm), verdict))
    notes.append(
        f"every value against the best per metric; Holm over the {len(sides) - 1} comparisons of each metric; "
        "intervals unadjusted"
    )
    return BestComparison(a, by.removeprefix("config."), str(root), tuple(side_of.values()), tuple(rows), tuple(notes))


def _numeric(rec: RunRecord) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in rec.final_metrics.items()
        if k not in _NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def curve_set_of(cmp: Comparison, *, metric: str, ema: float | None = None, level: float = 0.95) -> Any:
    """The curves of both sides (from each run's ``metrics.jsonl``) as ``expkit plot curves`` draws them:
    a band per side and the difference panel B - A."""
    from expkit.stats.curves import load_curves, summarize_curves

    root = Path(cmp.store)
    curves = []
    for side in (cmp.a, cmp.b):
        for c in load_curves([root / rid for rid in side.run_ids], metric=metric):
            curves.append(replace(c, group=side.label))
    return summarize_curves(
        curves, metric=metric, x_key="step", ema=ema, level=level, compare=(cmp.b.label, cmp.a.label)
    )
