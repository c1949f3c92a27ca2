"""lm-evaluation-harness output directories as per-item results, one table per task.

``lm_eval --output_path DIR --log_samples`` writes, per model, ``DIR/<model>/results_<date>.json`` (the
aggregate scores, the model name and its arguments; ``--output_path NAME.json`` writes ``NAME_<date>.json``
in NAME.json's folder instead, as ``EvaluationTracker.save_results_aggregated`` does) and
``samples_<task>_<date>.jsonl`` beside it, one
line per (document, filter): ``doc_id``, ``filter``, ``metrics`` (the metric names) and each metric's
per-item value (``"exact_match": 1.0``, ``"acc": 0``), as ``lm_eval/evaluator.py`` logs them. Reading needs
no lm-eval install: the files are plain JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.data.nesting import ORJSON_MAX_DEPTH, json_nesting_depth, too_deep
from expkit.errors import InputError, UsageError
from expkit.integrations.readers import EvalItems
from expkit.runs.files import is_regular_file
from expkit.stats.tables import ItemResults, TaskResults

__all__ = ["LmEvalRun", "LmEvalRuns", "find_lmeval_runs", "read_lmeval_tasks"]

# keys of a logged sample that are bookkeeping, not metrics (older harness versions have no "metrics" list)
_NOT_METRICS = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}
# prefixes lm-eval's EvaluationTracker looks for in model_args, in its order (peft before pretrained)
_MODEL_ARG_KEYS = ("peft=", "delta=", "pretrained=", "model=", "path=", "engine=")


@dataclass(frozen=True)
class LmEvalRun:
    """One model's lm-eval output: per task, the ``samples_<task>_<date>.jsonl`` of its latest run, and
    the ``results_<date>.json`` files those runs wrote."""

    model: str
    results_files: tuple[str, ...]
    samples: dict[str, str]  # task -> samples file


def _model_name(results: dict[str, Any], path: Path) -> str:
    name = results.get("model_name")
    if isinstance(name, str) and name:
        return name
    raw = results.get("config")
    config: dict[str, Any] = raw if isinstance(raw, dict) else {}
    args = config.get("model_args")
    if isinstance(args, dict):
        for key in _MODEL_ARG_KEYS:
            if args.get(key[:-1]):
                return str(args[key[:-1]])
    if isinstance(args, str):
        for key in _MODEL_ARG_KEYS:
            if key in args:
                return args.split(key, 1)[1].split(",", 1)[0]
    if config.get("model"):
        return f"{config['model']} ({path.parent.name})"
    return path.parent.name


def _refuse_non_regular(path: Path) -> None:
    """An InputError for a FIFO or device found where lm-eval writes its files: opening a FIFO with no writer
    blocks for ever (a directory is searched with rglob, so such a file is not given by hand)."""
    if not is_regular_file(path):
        raise InputError(
            "not a regular file (a FIFO or device?): lm-eval writes its results and samples as files",
            path=path,
            hint="move it out of the output directory",
        )


def _read_results(path: Path) -> dict[str, Any]:
    """The results file; lm-eval writes it with ``json.dumps``, which spells a NaN stderr ``NaN`` (refused by
    orjson, read by the standard library's parser)."""
    _refuse_non_regular(path)
    raw = path.read_bytes()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            line, col = (exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else (None, None)
            raise InputError(f"not valid JSON: {exc}", path=path, line=line, column=col) from None
        except RecursionError:  # past orjson's depth limit, the standard parser recurses per level
            raise too_deep(path, json_nesting_depth(raw), ORJSON_MAX_DEPTH, what="the results file is") from None
    if not isinstance(data, dict):
        raise InputError("an lm-eval results file holds a JSON object", path=path)
    return data


# EvaluationTracker's date_id: datetime.now().isoformat().replace(":", "-")
_DATED_JSON = re.compile(r"_(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.json$")


def _results_date(path: Path) -> str | None:
    """The date id of a results file named as lm-eval names it (``results_<date>.json``, ``NAME_<date>.json``)."""
    if path.name.startswith("results_") and path.suffix == ".json":
        return path.stem.removeprefix("results_")
    m = _DATED_JSON.search(path.name)
    return m.group(1) if m else None


def _iter_results_files(root: Path) -> list[tuple[Path, str]]:
    """(results file, its date id) under ``root``: ``results_<date>.json``, and ``NAME_<date>.json`` with
    ``samples_*_<date>.jsonl`` beside it (what ``--output_path NAME.json`` writes)."""
    out = []
    for p in sorted(root.rglob("*.json")):
        if p.name.startswith("results_"):
            out.append((p, p.stem.removeprefix("results_")))
        elif (m := _DATED_JSON.search(p.name)) and any(p.parent.glob(f"samples_*_{m.group(1)}.jsonl")):
            out.append((p, m.group(1)))
    return out


@dataclass(frozen=True)
class LmEvalRuns:
    """The models' runs found under the directories, and notes on what was chosen (latest samples)."""

    runs: tuple[LmEvalRun, ...]
    notes: tuple[str, ...]


def find_lmeval_runs(directories: Sequence[str | Path]) -> LmEvalRuns:
    """Every model's lm-eval output under the directories (searched recursively; a ``results_<date>.json``
    given as a path is that one run, with the samples of its date beside it). A model run several
    times keeps, per task, its latest samples (by the date in the file name; said in the returned notes),
    so runs of different tasks on different days add up. One model name under two of the given
    directories is two configurations, labelled ``model [directory]``.

    Raises:
        InputError: a path that is neither a directory nor a results file; a directory without
            ``results_*.json``; a run
            without ``samples_*.jsonl`` (it was run without ``--log_samples``).
    """
    # (arg, root, model, results, its date id, samples)
    found_runs: list[tuple[int, Path, str, Path, str, dict[str, str]]] = []
    for arg, d in enumerate(directories):
        root = Path(d)
        if root.is_file() and (date := _results_date(root)) is not None:
            found = [(root, date)]  # one run of a directory holding several (0-shot and 2-shot of one model)
            root = root.parent
        elif not root.is_dir():
            raise InputError(
                "is not a directory",
                path=root,
                hint="pass lm_eval's --output_path directory (one per model, or one holding several)",
            )
        else:
            found = _iter_results_files(root)
        if not found:
            raise InputError(
                "holds no results_*.json (nor NAME_<date>.json beside samples_*.jsonl)",
                path=root,
                hint="pass the directory given to lm_eval --output_path (run with --log_samples)",
            )
        for res, date_id in found:
            suffix = f"_{date_id}.jsonl"
            samples = {
                f.name[len("samples_") : -len(suffix)]: str(f) for f in sorted(res.parent.glob(f"samples_*{suffix}"))
            }
            if not samples:
                raise InputError(
                    "has no samples_<task>_*.jsonl beside it: per-item scores are missing",
                    path=res,
                    hint="re-run lm_eval with --log_samples",
                )
            found_runs.append((arg, root, _model_name(_read_results(res), res), res, date_id, samples))
    # one model name under two of the given directories: two configurations of it, told apart by directory
    args_of: dict[str, set[int]] = {}
    for arg, _, model, _, _, _ in found_runs:
        args_of.setdefault(model, set()).add(arg)
    merged: dict[str, dict[str, tuple[str, Path, str]]] = {}  # label -> task -> (date id, results, samples)
    notes: list[str] = []
    for _, root, model, res, date_id, samples in found_runs:
        label = f"{model} [{root.name}]" if len(args_of[model]) > 1 else model
        tasks = merged.setdefault(label, {})
        for task, sample_file in samples.items():
            prev = tasks.get(task)
            # the ISO date id orders the runs; a task re-run keeps its latest samples
            if prev is not None:
                older, newer = sorted((prev, (date_id, res, sample_file)))
                notes.append(f"{label}: task {task} run more than once, used {newer[2]} (not {older[2]})")
                tasks[task] = newer
            else:
                tasks[task] = (date_id, res, sample_file)
    runs = [
        LmEvalRun(
            label,
            tuple(sorted({str(r) for _, r, _ in tasks.values()})),
            {t: f for t, (_, _, f) in sorted(tasks.items())},
        )
        for label, tasks in merged.items()
    ]
    return LmEvalRuns(tuple(runs), tuple(notes))


def _score(value: Any, metric: str, path: str, line: int) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    raise InputError(
        f"metric {metric!r} has the per-item value {value!r}, not a number: a corpus-level metric "
        "(bleu, f1 over the corpus ...) cannot be compared item by item",
        path=path,
        line=line,
        hint="choose a per-item metric (acc, exact_match ...)",
    )


@dataclass
class _TaskFile:
    """What one samples file holds, per filter: item -> score for the chosen metric."""

    metrics: list[str]
    filters: list[str]
    rows: list[tuple[int, dict[str, Any]]]


def _load_samples(path: str) -> _TaskFile:
    from expkit.data.jsonl import iter_jsonl_objects

    _refuse_non_regular(Path(path))
    rows = list(iter_jsonl_objects(path, nan_ok=True))  # lm-eval writes samples with json.dumps: NaN as NaN
    if not rows:
        raise InputError(
            "no logged sample: nothing to compare item by item",
            path=path,
            hint="was the task run with --limit 0, or cut short?",
        )
    metrics: dict[str, None] = {}
    filters: dict[str, None] = {}
    for line, row in rows:
        if "doc_id" not in row:
            raise InputError(
                "a logged sample without doc_id", path=path, line=line, hint="expected lm_eval --log_samples output"
            )
        names = row.get("metrics")
        if not isinstance(names, list):
            names = [k for k, v in row.items() if k not in _NOT_METRICS and isinstance(v, (int, float))]
        metrics.update(dict.fromkeys(str(n) for n in names))
        filters[str(row.get("filter", "none"))] = None
    return _TaskFile(list(metrics), list(filters), rows)


def _item_scores(run: LmEvalRun, task: str, tf: _TaskFile, m: str, f: str, notes: list[str]) -> dict[str, float]:
    """doc_id -> score of metric ``m`` under filter ``f`` in one model's samples. A NaN score (lm-eval writes
    ``NaN`` when a metric fails on a document) is left out with a note naming file:line; a mean that disagrees
    with the ``results_*.json`` of the same run is noted."""
    path = run.samples[task]
    seen: dict[str, int] = {}
    per_item: dict[str, float] = {}
    nan_lines: list[int] = []
    for line, row in tf.rows:
        if str(row.get("filter", "none")) != f:
            continue
        item = str(row["doc_id"])
        if item in seen:
            raise InputError(
                f"doc_id {item} appears twice for filter {f!r} (first on line {seen[item]})",
                path=path,
                line=line,
                hint="an older harness logs no 'filter' key, so a task with "
                "two filters repeats each doc_id: re-run with a current lm_eval"
                if "filter" not in row
                else None,
            )
        seen[item] = line
        if m not in row:
            raise InputError(f"the sample has no value for metric {m!r}", path=path, line=line)
        x = _score(row[m], m, path, line)
        if math.isnan(x):
            nan_lines.append(line)
            continue
        per_item[item] = x
    if nan_lines:
        more = f" (and {len(nan_lines) - 1} more)" if len(nan_lines) > 1 else ""
        notes.append(
            f"{run.model}: {task} {m} is NaN at {path}:{nan_lines[0]}{more}: "
            f"{len(nan_lines)} document(s) left out, the others paired"
        )
    logged = _logged_aggregate(path, task, m, f)
    if logged is not None and per_item:
        mean = math.fsum(per_item.values()) / len(per_item)
        value, results_file = logged
        if math.isfinite(value) and abs(mean - value) > _AGGREGATE_TOLERANCE * max(1.0, abs(value)):
            notes.append(
                f"{run.model}: {task} {m},{f}: the samples' mean {mean:.4g} disagrees with {value:.4g} in "
                f"{results_file}: the samples may be from another run (or the metric is not a per-item mean)"
            )
    return per_item


# |samples' mean - logged aggregate| beyond this (relative to max(1, |aggregate|)) gets a note: lm-eval's own
# aggregate of a per-item mean is that mean up to float rounding; 1e-6 leaves room for a rounded JSON value
_AGGREGATE_TOLERANCE = 1e-6


def _logged_aggregate(samples_path: str, task: str, metric: str, filt: str) -> tuple[float, str] | None:
    """The ``"metric,filter"`` value lm-eval wrote for ``task`` in the results file of the samples' run (the
    same date id, beside them), or None when there is none to check against."""
    sp = Path(samples_path)
    m = re.search(r"_(\d{4}-\d{2}-\d{2}T[^_]*)\.jsonl$", sp.name)
    if m is None:
        return None
    for cand in sorted(sp.parent.glob(f"*_{m.group(1)}.json")):
        try:
            data = _read_results(cand)
        except InputError:
            return None
        block = data.get("results")
        value = block.get(task, {}).get(f"{metric},{filt}") if isinstance(block, dict) else None
        if isinstance(block, dict) and isinstance(block.get(task), dict):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value), str(cand)
            return None
    return None


def _choose_tasks(runs: Sequence[LmEvalRun], tasks: Sequence[str] | None, notes: list[str]) -> list[str]:
    """The tasks asked for (each must be run for every model), or every task all models have (noted)."""
    common = [t for t in runs[0].samples if all(t in r.samples for r in runs[1:])]
    if tasks:
        for t in tasks:
            lacking = [r.model for r in runs if t not in r.samples]
            if lacking:
                have = sorted({k for r in runs for k in r.samples})
                raise UsageError(f"task {t!r}: no samples for {', '.join(lacking)}", hint=f"tasks: {', '.join(have)}")
        chosen = list(dict.fromkeys(tasks))
    else:
        chosen = common
        skipped = sorted({k for r in runs for k in r.samples} - set(common))
        if skipped:
            notes.append(f"tasks not run for every model, left out: {', '.join(skipped)}")
        if not chosen:
            raise UsageError("the models share no task", hint="run lm_eval on the same tasks for every model")
    return chosen


def _refuse_unknown_filter(filter_name: str, loaded: dict[str, dict[str, _TaskFile]]) -> None:
    """A UsageError listing the filters present when no task of any model logs ``filter_name`` (a typo such as
    ``strict_match`` was taken as the single filter ``none`` of each task, exit 0). A filter some task logs is
    kept: a task with the single filter ``none`` then takes ``none`` (said in a note)."""
    present: dict[str, None] = {}
    for files in loaded.values():
        for tf in files.values():
            present.update(dict.fromkeys(tf.filters))
    if filter_name not in present:
        raise UsageError(
            f"no filter {filter_name!r} in any task's samples (--filter)",
            hint=f"filters present: {', '.join(present) or 'none'}",
        )


def read_lmeval_tasks(
    directories: Sequence[str | Path],
    *,
    tasks: Sequence[str] | None = None,
    metric: str | None = None,
    filter_name: str | None = None,
    min_models: int = 2,
) -> EvalItems:
    """Per-task, per-model item scores from lm-eval output directories, ready for ``build_task_tables``.

    Args:
        directories: ``--output_path`` directories (the model's subdirectory or the one above it).
        tasks: tasks to compare (default: every task all models have; the others are named in a note).
        metric: the per-item metric (default: the first the harness lists for the task, e.g. ``acc``).
        filter_name: the harness filter (``strict-match``, ``flexible-extract``; default: the first).
        min_models: fewer models found is a UsageError (1: one labelled run of a comparison built by the caller).

    Returns:
        EvalItems: one TaskResults per task, models in the order found (the first is the default
        baseline); its notes say which metric and filter were chosen where there was a choice.

    Raises:
        InputError: missing files or samples, a doc_id seen twice for one filter (both lines named), a
            non-numeric per-item metric value.
        UsageError: fewer than two models; a --task, --metric or --filter that a model lacks (the
            available ones listed).
    """
    found = find_lmeval_runs(directories)
    runs, notes = found.runs, list(found.notes)
    if len(runs) < min_models:
        raise UsageError(
            f"found one model ({runs[0].model}) in {', '.join(map(str, directories))}; a comparison needs two",
            hint="pass one lm_eval output directory per model",
        )
    chosen = _choose_tasks(runs, tasks, notes)
    loaded = {task: {r.model: _load_samples(r.samples[task]) for r in runs} for task in chosen}
    if filter_name is not None:
        _refuse_unknown_filter(filter_name, loaded)
    out = []
    for task in chosen:
        files = loaded[task]
        first = files[runs[0].model]
        m = metric or (first.metrics[0] if first.metrics else "")  # "" is in no model's metrics: refused below
        f = filter_name or first.filters[0]
        if filter_name and filter_name not in first.filters and len(first.filters) == 1:
            f = first.filters[0]  # a task with a single filter ("none") takes it whatever --filter says
            notes.append(f"{task}: filter {filter_name} not logged; its only filter {f} used")
        for r in runs:
            tf, src, model = files[r.model], r.samples[task], r.model
            if m not in tf.metrics:
                raise UsageError(
                    f"task {task!r}: {model} has no per-item metric {m!r} ({src})",
                    hint=f"per-item metrics: {', '.join(tf.metrics) or 'none'}",
                )
            if f not in tf.filters:
                raise UsageError(
                    f"task {task!r}: {model} has no filter {f!r} ({src})",
                    hint=f"filters: {', '.join(tf.filters)}",
                )
        if metric is None and len(first.metrics) > 1:
            notes.append(
                f"{task}: metric {m} (also logged: {', '.join(x for x in first.metrics if x != m)}; "
                "choose the metric to compare another)"
            )
        if filter_name is None and len(first.filters) > 1:
            notes.append(
                f"{task}: filter {f} (also logged: {', '.join(x for x in first.filters if x != f)}; "
                "choose the filter to compare another)"
            )
        scores = {r.model: _item_scores(r, task, files[r.model], m, f, notes) for r in runs}
        n_rows = sum(map(len, scores.values()))
        results = ItemResults(f"lm-eval {task} ({m}, filter {f})", tuple(r.model for r in runs), scores, None, n_rows)
        out.append(TaskResults(task, results, tuple(r.samples[task] for r in runs)))
    return EvalItems(tuple(out), tuple(notes))
