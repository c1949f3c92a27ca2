"""Eval tables from per-item results: accuracy with its interval per model, and each model against a
baseline by a paired comparison on the same items, Holm-adjusted across the rows.

Input: JSONL or CSV rows with ``model``, ``item``, ``score`` and optionally ``cluster``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from expkit.errors import InputError, UsageError
from expkit.stats.intervals import wilson_interval
from expkit.stats.multiplicity import holm_adjust
from expkit.stats.paired import N_BOOT, PairedComparison, Pairing, compare_models, max_safe_score
from expkit.stats.seeds import t_interval

__all__ = [
    "ComparisonRow",
    "EvalTable",
    "ItemResults",
    "ModelRow",
    "TaskResults",
    "TaskTables",
    "build_eval_table",
    "build_task_tables",
    "clustered_model_interval",
    "read_item_results",
]

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


def _iter_rows(path: Path) -> Iterator[tuple[int, Mapping[str, object]]]:
    """(line number, row) for a JSONL or CSV file (by suffix; ``.csv``/``.tsv`` are CSV, anything else
    JSONL). UTF-8 with or without a BOM; another encoding is an InputError naming the line."""
    if path.suffix.lower() in (".csv", ".tsv"):
        from expkit.data.csvfile import iter_csv_rows

        yield from iter_csv_rows(path, required=REQUIRED_FIELDS, hint="name the columns model,item,score[,cluster]")
        return
    from expkit.data.jsonl import iter_jsonl_objects

    # ids past 2**64 stay distinct; two "score" keys in one line are refused (json would keep the last)
    yield from iter_jsonl_objects(path, exact_ints=True, distinct_keys=True)


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
    if p.is_dir():
        raise InputError(
            "is a directory, not a file of per-item results",
            path=p,
            hint="lm_eval output directories: expkit stats table --from lm-eval DIR_A DIR_B",
        )
    if p.suffix == ".eval":
        raise InputError("is an Inspect log", path=p, hint="expkit stats table --from inspect LOG_A LOG_B")
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
                hint = "every row needs model, item and score"
                if "doc_id" in row and ("filtered_resps" in row or "metrics" in row):
                    hint = (
                        "this is lm-evaluation-harness --log_samples output: pass each model's output "
                        "directory with expkit stats table --from lm-eval DIR_A DIR_B"
                    )
                elif "eval" in row and "samples" in row:
                    hint = "this is an Inspect log: expkit stats table --from inspect LOG_A LOG_B"
                raise InputError(f"field {f!r} is missing or empty", path=p, line=lineno, hint=hint)
        model, item = str(row["model"]), str(row["item"])
        raw = row["score"]
        try:
            if isinstance(raw, (bool, int, float, str)):
                score = float(raw)
            else:
                raise ValueError
        except ValueError:
            raise InputError(f"score {raw!r} is not a number", path=p, line=lineno) from None
        if not math.isfinite(score):
            raise InputError(f"score {raw!r} is not finite", path=p, line=lineno)
        key = (model, item)
        if key in seen:
            raise InputError(
                f"model {model!r} item {item!r} appears twice (first on line {seen[key]})",
                path=p,
                line=lineno,
                hint="keep one score per (model, item)",
            )
        seen[key] = lineno
        scores.setdefault(model, {})[item] = score
        cl = row.get("cluster")
        if cl not in (None, ""):
            any_cluster = True
            if item in clusters and clusters[item] != str(cl):
                raise InputError(
                    f"item {item!r} is in cluster {cl!r} here and {clusters[item]!r} on line {cluster_line[item]}",
                    path=p,
                    line=lineno,
                )
            clusters[item], cluster_line[item] = str(cl), lineno
        n_rows += 1
    if n_rows == 0:
        raise InputError("the file has no result rows", path=p, hint="expected rows with model, item, score")
    return ItemResults(str(p), tuple(scores), scores, clusters if any_cluster else None, n_rows)


@dataclass(frozen=True)
class ModelRow:
    """One model: mean score on its n items with an interval (Wilson for 0/1 scores, else t).

    With clusters (an item's epochs, the questions of one passage) the items are not independent:
    0/1 scores get a Wilson interval on the effective sample size n / design_effect, graded scores a
    normal interval on the cluster-robust standard error; ``n_clusters`` and ``design_effect`` say so.
    """

    model: str
    n: int
    score: float
    low: float
    high: float
    interval: str
    n_clusters: int | None = None
    design_effect: float | None = None


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
    """``task`` names the task of a multi-task table (lm-eval, Inspect); None for one file of rows."""

    path: str
    baseline: str
    level: float
    models: tuple[ModelRow, ...]
    comparisons: tuple[ComparisonRow, ...]
    notes: tuple[str, ...]
    task: str | None = None
    proportion: bool = True
    """Every item score lies in [0, 1] (0/1 or fractional): scores and deltas read as percentages ("points").
    Otherwise they are in the metric's own units (BLEU-100, a 1-10 judge rating, a count) and shown as they are."""

    @property
    def unit(self) -> str:
        """``points`` (percentage points of a proportion) or ``score units`` (the metric's own scale)."""
        return "points" if self.proportion else "score units"


def _wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's bounds for an estimate p on a (possibly fractional, effective) sample size n."""
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return (0.0 if p == 0.0 else max(0.0, centre - half)), (1.0 if p == 1.0 else min(1.0, centre + half))


def clustered_model_interval(
    values: np.ndarray, clusters: np.ndarray, *, level: float = 0.95
) -> tuple[float, float, float, int, float]:
    """Mean of ``values`` with an interval that honours clusters: ``(mean, low, high, G, design_effect)``.

    The cluster-robust variance of the mean, G/(G-1) * sum_g (sum_i in g (x_i - mean))^2 / n^2 (the
    same estimator as statsmodels' OLS ``cov_type="cluster"`` on an intercept), divided by the
    independent-items variance gives the design effect (floored at 1). 0/1 scores: Wilson on the
    effective sample size n / deff (Dean & Pagano 2015, J Surv Stat Methodol 3:484); graded scores:
    mean +- z * se.
    """
    from expkit.stats.paired import _clustered, _z

    n = values.size
    mean = float(values.mean())
    se, low, high, _, g = _clustered(values, clusters, level)
    binary = bool(np.all((values == 0.0) | (values == 1.0)))
    iid_var = mean * (1.0 - mean) / n if binary else (float(values.var(ddof=1)) / n if n > 1 else 0.0)
    deff = max(1.0, se * se / iid_var) if iid_var > 0.0 else 1.0
    if binary:
        low, high = _wilson_bounds(mean, n / deff, _z(level))
    return mean, float(low), float(high), g, deff


def _model_row(model: str, scores: dict[str, float], level: float, clusters: dict[str, str] | None = None) -> ModelRow:
    arr = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    n = arr.size
    binary = bool(np.all((arr == 0) | (arr == 1)))
    if clusters is not None and n > 1:
        cl = np.array([clusters.get(k, k) for k in scores])
        if np.unique(cl).size >= 2:
            mean, low, high, g, deff = clustered_model_interval(arr, cl, level=level)
            kind = "wilson-clustered" if binary else "clustered-se"
            return ModelRow(model, n, mean, low, high, kind, n_clusters=g, design_effect=deff)
    if binary:
        iv = wilson_interval(int(arr.sum()), n, level=level)
        return ModelRow(model, n, iv.estimate, iv.low, iv.high, "wilson")
    if n < 2:
        return ModelRow(model, n, float(arr.mean()), math.nan, math.nan, "none (1 item)")
    ti = t_interval(arr, level=level)
    return ModelRow(model, n, ti.estimate, ti.low, ti.high, "t")


def _comparison_row(model: str, base: str, c: PairedComparison, p_holm: float, level: float) -> ComparisonRow:
    verdict = c.verdict_text
    if c.verdict != "inconclusive" and p_holm >= 1.0 - level:
        verdict = f"inconclusive after Holm (p_holm = {p_holm:.3g})"
    return ComparisonRow(model, base, c, p_holm, verdict)


def _refuse_overflow(results: ItemResults) -> None:
    """Every score is finite, but sums, differences and variances of scores near 1e308 overflow float64
    to inf/nan: refuse such scores up front (naming the largest) rather than print inf or nan."""
    n = max(len(items) for items in results.scores.values())
    model, item, score = max(
        ((m, i, v) for m, items in results.scores.items() for i, v in items.items()), key=lambda t: abs(t[2])
    )
    limit = max_safe_score(n)
    if abs(score) > limit:
        raise InputError(
            f"score {score:g} (model {model!r}, item {item!r}) is too large: means, differences and "
            f"intervals over {n} items would overflow float64 to inf/nan (|score| must be <= {limit:.3g})",
            path=results.path,
            hint="rescale the scores (divide by a constant)",
        )


def _overlap_note(model: str, base: str, c: PairedComparison) -> str | None:
    """What the comparison of ``model`` with ``base`` did with items only one of them has, naming both sides
    (the delta is model - baseline, as ``expkit compare`` takes B - A with A the baseline)."""
    if c.paired and c.n_a == c.n_b == c.n_common:
        return None
    if c.paired:
        return (
            f"{model} vs baseline {base}: paired on the {c.n_common} shared items; dropped "
            f"{c.n_b - c.n_common} of {c.n_b} items only in {base} and {c.n_a - c.n_common} of "
            f"{c.n_a} only in {model}"
        )
    return f"{model} vs baseline {base}: unpaired as asked, over all {c.n_b} items of {base} and {c.n_a} of {model}"


def build_eval_table(
    results: ItemResults,
    *,
    baseline: str | None = None,
    level: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int = 0,
    pairing: Pairing = "shared",
) -> EvalTable:
    """The table: a row per model, and every other model compared with ``baseline`` (default: the
    first model in the file). Each comparison is B - A with A the baseline (as ``expkit compare`` has it),
    paired on the items both scored (the items dropped from each side noted), or unpaired over all the
    items when ``pairing="unpaired"``.

    Raises:
        UsageError: a baseline that is not in the results (the known models listed); a model that shares
            no item with the baseline (pairing="shared").
    """
    base = baseline if baseline is not None else results.models[0]
    if base not in results.scores:
        raise UsageError(
            f"baseline {base!r} is not a model in {results.path}", hint=f"models: {', '.join(results.models)}"
        )
    _refuse_overflow(results)
    rows = tuple(_model_row(m, results.scores[m], level, results.clusters) for m in results.models)
    others = [m for m in results.models if m != base]
    comps = [
        compare_models(
            results.scores[m],
            results.scores[base],
            clusters=results.clusters,
            level=level,
            n_boot=n_boot,
            seed=seed,
            pairing=pairing,
        )
        for m in others
    ]
    p_holm = holm_adjust([c.p_value for c in comps]) if comps else ()
    out = [_comparison_row(m, base, c, ph, level) for m, c, ph in zip(others, comps, p_holm, strict=True)]
    notes = [n for c in out if (n := _overlap_note(c.model, base, c.comparison)) is not None]
    if results.clusters is not None:
        notes.append(f"clustered standard errors over {len(set(results.clusters.values()))} clusters")
    if len(out) > 1:
        notes.append(f"p-values Holm-adjusted over {len(out)} comparisons")
    proportion = all(0.0 <= v <= 1.0 for items in results.scores.values() for v in items.values())
    if not proportion:
        notes.append("scores are not all in [0, 1]: shown in the metric's own units, not as percentages")
    return EvalTable(results.path, base, level, rows, tuple(out), tuple(notes), proportion=proportion)


@dataclass(frozen=True)
class TaskResults:
    """One task of a multi-task eval (lm-eval, Inspect): its per-item results and where they came from."""

    task: str
    results: ItemResults
    sources: tuple[str, ...]


@dataclass(frozen=True)
class TaskTables:
    """One eval table per task, each model against the same baseline; ``p_holm`` of every comparison
    is Holm-adjusted over all tasks and models together (``n_comparisons`` of them), so "better on 3 of
    12 tasks" survives the multiple looks. ``notes`` say what was chosen (filters, metrics, skips)."""

    source: str
    baseline: str
    level: float
    tables: tuple[EvalTable, ...]
    n_comparisons: int
    notes: tuple[str, ...]


def build_task_tables(
    tasks: list[TaskResults],
    *,
    source: str,
    baseline: str | None = None,
    level: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int = 0,
    notes: tuple[str, ...] = (),
    pairing: Pairing = "shared",
) -> TaskTables:
    """A table per task (``build_eval_table``), then Holm over every comparison of every task.

    Raises:
        UsageError: no tasks; a baseline that is not among the models.
    """
    if not tasks:
        raise UsageError("no tasks to compare")
    models = list(dict.fromkeys(m for t in tasks for m in t.results.models))
    base = baseline if baseline is not None else tasks[0].results.models[0]
    if base not in models:
        raise UsageError(f"baseline {base!r} is not among the models", hint=f"models: {', '.join(models)}")
    tables = [
        replace(
            build_eval_table(t.results, baseline=base, level=level, n_boot=n_boot, seed=seed, pairing=pairing),
            task=t.task,
        )
        for t in tasks
    ]
    flat = [(i, j) for i, tb in enumerate(tables) for j in range(len(tb.comparisons))]
    p_holm = holm_adjust([tables[i].comparisons[j].comparison.p_value for i, j in flat]) if flat else ()
    new_rows: dict[int, list[ComparisonRow]] = {i: [] for i in range(len(tables))}
    for (i, j), ph in zip(flat, p_holm, strict=True):
        c = tables[i].comparisons[j]
        new_rows[i].append(_comparison_row(c.model, c.baseline, c.comparison, ph, level))
    out = []
    for i, tb in enumerate(tables):
        kept = tuple(n for n in tb.notes if not n.startswith("p-values Holm-adjusted"))
        out.append(replace(tb, comparisons=tuple(new_rows[i]), notes=kept))
    all_notes = list(notes)
    if len(flat) > 1:
        all_notes.append(f"p-values Holm-adjusted over {len(flat)} comparisons ({len(tables)} tasks)")
    return TaskTables(source, base, level, tuple(out), len(flat), tuple(all_notes))
