"""Eval tables from per-item results: accuracy with its interval per model, and each model against a
baseline by a paired comparison on the same items, Holm-adjusted across the rows.

Input: JSONL or CSV rows with ``model``, ``item``, ``score`` and optionally ``cluster``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from expkit.errors import InputError, UsageError
from expkit.stats.intervals import wilson_interval
from expkit.stats.multiplicity import holm_adjust
from expkit.stats.paired import N_BOOT, PairedComparison, compare_models, max_safe_score
from expkit.stats.seeds import t_interval

__all__ = ["EvalTable", "ItemResults", "ModelRow", "ComparisonRow", "build_eval_table", "read_item_results"]

REQUIRED_FIELDS = ("model", "item", "score")


@dataclass(frozen=True)
class ItemResults:
    """Per-item scores: ``scores[model][item] = score``; ``clusters[item]`` when given. Models keep
    the order of first appearance in the file."""

    path: str
    models: tuple[str, ...]
    scores: dict[str, dict[str, float]]
    clusters: dict[str, str] | None
    n_rows: int


def _iter_rows(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """(line number, row) for a JSONL or CSV file (by suffix; ``.csv``/``.tsv`` are CSV, anything else
    JSONL). UTF-8 with or without a BOM; another encoding is an InputError naming the line."""
    if path.suffix.lower() in (".csv", ".tsv"):
        from expkit.data.csvfile import iter_csv_rows

        yield from iter_csv_rows(path, required=REQUIRED_FIELDS, hint="name the columns model,item,score[,cluster]")
        return
    from expkit.data.jsonl import iter_jsonl_objects

    yield from iter_jsonl_objects(path)


def read_item_results(path: str | Path) -> ItemResults:
    """Read per-item results, refusing malformed rows (with their line) and duplicated (model, item).

    Raises:
        InputError: missing file, empty file, a missing field, a score that is not a finite number,
            a (model, item) pair seen twice (both lines named), one item in two clusters.

    Example:
        >>> r = read_item_results("results.jsonl")   # doctest: +SKIP
        >>> r.models, r.n_rows   # doctest: +SKIP
        (('a', 'b'), 2000)
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p, hint="pass a JSONL or CSV file of per-item results")
    scores: dict[str, dict[str, float]] = {}
    seen: dict[tuple[str, str], int] = {}
    clusters: dict[str, str] = {}
    cluster_line: dict[str, int] = {}
    any_cluster = False
    n_rows = 0
    for lineno, row in _iter_rows(p):
        for f in REQUIRED_FIELDS:
            if row.get(f) in (None, ""):
                raise InputError(f"field {f!r} is missing or empty", path=p, line=lineno,
                                 hint="every row needs model, item and score")
        model, item = str(row["model"]), str(row["item"])
        raw = row["score"]
        try:
            if isinstance(raw, bool):
                score = float(raw)
            elif isinstance(raw, (int, float, str)):
                score = float(raw)
            else:
                raise ValueError
        except ValueError:
            raise InputError(f"score {raw!r} is not a number", path=p, line=lineno) from None
        if not math.isfinite(score):
            raise InputError(f"score {raw!r} is not finite", path=p, line=lineno)
        key = (model, item)
        if key in seen:
            raise InputError(f"model {model!r} item {item!r} appears twice (first on line {seen[key]})",
                             path=p, line=lineno, hint="keep one score per (model, item)")
        seen[key] = lineno
        scores.setdefault(model, {})[item] = score
        cl = row.get("cluster")
        if cl not in (None, ""):
            any_cluster = True
            if item in clusters and clusters[item] != str(cl):
                raise InputError(f"item {item!r} is in cluster {cl!r} here and {clusters[item]!r} on line "
                                 f"{cluster_line[item]}", path=p, line=lineno)
            clusters[item], cluster_line[item] = str(cl), lineno
        n_rows += 1
    if n_rows == 0:
        raise InputError("the file has no result rows", path=p, hint="expected rows with model, item, score")
    return ItemResults(str(p), tuple(scores), scores, clusters if any_cluster else None, n_rows)


@dataclass(frozen=True)
class ModelRow:
    """One model: mean score on its n items with an interval (Wilson for 0/1 scores, else t)."""

    model: str
    n: int
    score: float
    low: float
    high: float
    interval: str


@dataclass(frozen=True)
class ComparisonRow:
    """A model against the baseline; ``p_holm`` is Holm-adjusted over all rows of the table and the
    verdict uses it: ``better``/``worse`` only when the interval excludes 0 and p_holm < alpha."""

    model: str
    baseline: str
    comparison: PairedComparison
    p_holm: float
    verdict: str


@dataclass(frozen=True)
class EvalTable:
    path: str
    baseline: str
    level: float
    models: tuple[ModelRow, ...]
    comparisons: tuple[ComparisonRow, ...]
    notes: tuple[str, ...]


def _model_row(model: str, scores: dict[str, float], level: float) -> ModelRow:
    arr = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    n = arr.size
    if np.all((arr == 0) | (arr == 1)):
        iv = wilson_interval(int(arr.sum()), n, level=level)
        return ModelRow(model, n, iv.estimate, iv.low, iv.high, "wilson")
    if n < 2:
        return ModelRow(model, n, float(arr.mean()), math.nan, math.nan, "none (1 item)")
    ti = t_interval(arr, level=level)
    return ModelRow(model, n, ti.estimate, ti.low, ti.high, "t")


def _refuse_overflow(results: ItemResults) -> None:
    """Every score is finite, but sums, differences and variances of scores near 1e308 overflow float64
    to inf/nan: refuse such scores up front (naming the largest) rather than print inf or nan."""
    n = max(len(items) for items in results.scores.values())
    model, item, score = max(((m, i, v) for m, items in results.scores.items() for i, v in items.items()),
                             key=lambda t: abs(t[2]))
    limit = max_safe_score(n)
    if abs(score) > limit:
        raise InputError(f"score {score:g} (model {model!r}, item {item!r}) is too large: means, differences and "
                         f"intervals over {n} items would overflow float64 to inf/nan (|score| must be <= {limit:.3g})",
                         path=results.path, hint="rescale the scores (divide by a constant)")


def build_eval_table(results: ItemResults, *, baseline: str | None = None, level: float = 0.95,
                     n_boot: int = N_BOOT, seed: int = 0) -> EvalTable:
    """The table: a row per model, and every other model compared with ``baseline`` (default: the
    first model in the file).

    Raises:
        UsageError: a baseline that is not in the results (the known models listed).
    """
    base = baseline if baseline is not None else results.models[0]
    if base not in results.scores:
        raise UsageError(f"baseline {base!r} is not a model in {results.path}",
                         hint=f"models: {', '.join(results.models)}")
    _refuse_overflow(results)
    rows = tuple(_model_row(m, results.scores[m], level) for m in results.models)
    others = [m for m in results.models if m != base]
    comps = [compare_models(results.scores[m], results.scores[base], clusters=results.clusters, level=level,
                            n_boot=n_boot, seed=seed) for m in others]
    p_holm = holm_adjust([c.p_value for c in comps]) if comps else ()
    alpha = 1.0 - level
    out = []
    for m, c, ph in zip(others, comps, p_holm):
        verdict = c.verdict_text
        if c.verdict != "inconclusive" and ph >= alpha:
            verdict = f"inconclusive after Holm (p_holm = {ph:.3g})"
        out.append(ComparisonRow(m, base, c, ph, verdict))
    notes = [f"{c.model}: {c.comparison.note}" for c in out if not c.comparison.paired]
    if results.clusters is not None:
        notes.append(f"clustered standard errors over {len(set(results.clusters.values()))} clusters")
    if len(out) > 1:
        notes.append(f"p-values Holm-adjusted over {len(out)} comparisons")
    return EvalTable(results.path, base, level, rows, tuple(out), tuple(notes))
