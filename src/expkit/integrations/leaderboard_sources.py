"""What ``expkit stats leaderboard`` reads: one per-item file (or log) per model, in any format a reader
knows, aligned into one models x items score matrix, and a published table to check.

Formats: MMLU-Pro's lists (no flags), any JSON/JSONL file through a field mapping, the rows files of
``stats table`` (every model of the file becomes a row), lm-eval output directories and Inspect logs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from expkit.errors import InputError, UsageError
from expkit.integrations.item_files import (
    FieldMap,
    ModelOutputs,
    is_mmlu_pro,
    load_entries,
    model_name_of,
    outputs_from_entries,
)
from expkit.integrations.readers import EvalQuery, LabelledSource, eval_readers, read_eval_items

if TYPE_CHECKING:
    from expkit.stats.leaderboard import Leaderboard, ScoreMatrix

__all__ = ["LeaderboardRequest", "build_leaderboard_from", "read_published", "read_score_matrix"]

_LOG_READERS = ("items", "lm-eval", "inspect")


@dataclass(frozen=True)
class LeaderboardRequest:
    """A leaderboard to build: the files (or ``NAME=PATH`` labels), how to read them (``reader`` None:
    by sniffing; ``fields``: a field mapping), and the analysis options of
    :func:`~expkit.stats.leaderboard.build_leaderboard`."""

    paths: tuple[str, ...] = ()
    labels: tuple[LabelledSource, ...] = ()
    reader: str | None = None
    fields: FieldMap | None = None
    cluster: str | None = None
    query: EvalQuery = field(default_factory=EvalQuery)
    unparsed: str = "wrong"
    adjust: str = "holm"
    level: float = 0.95
    seed: int = 0
    n_boot: int = 1000
    published: str | None = None


def _outputs_of_items(found_tasks: Sequence[object], path: str, reader: str) -> list[tuple[str, ModelOutputs]]:
    """Each model a log reader found, as (name in the file, ModelOutputs) with no unparsed answers."""
    from expkit.stats.tables import TaskResults

    tasks = [t for t in found_tasks if isinstance(t, TaskResults)]
    if len(tasks) != 1:
        names = ", ".join(t.task for t in tasks)
        raise UsageError(f"{path} holds {len(tasks)} tasks ({names}); a leaderboard is one task", hint="pass --task")
    res = tasks[0].results
    out = []
    for model in res.models:
        items = tuple(res.scores[model])
        arr = np.fromiter(res.scores[model].values(), dtype=np.float64, count=len(items))
        cl = tuple(res.clusters.get(k, k) for k in items) if res.clusters is not None else None
        out.append((model, ModelOutputs(path, items, arr, np.zeros(arr.size, dtype=bool), cl, 0)))
    return out


def _format_of(p: Path, request: LeaderboardRequest) -> str:
    """The reader for ``p``: the one asked for, ``fields`` with a mapping, else by sniffing."""
    if request.reader is not None:
        return request.reader
    if request.fields is not None:
        return "fields"
    if not p.exists():
        raise InputError("no such file or directory", path=p, hint="pass one per-item output file per model")
    for name in ("lm-eval", "inspect"):
        if eval_readers()[name].sniff(p):
            return name
    if p.is_dir():
        raise InputError("a directory holding no lm-eval results or Inspect logs", path=p)
    if p.suffix.lower() in (".csv", ".tsv"):  # stats table's rows: model, item, score[, cluster]
        return "items"
    return "auto"


def _read_one(path: str, request: LeaderboardRequest) -> list[tuple[str, ModelOutputs]]:
    """(name, outputs) for each model in ``path``: one for a per-model file, every model of a rows file."""
    p = Path(path)
    fmt = _format_of(p, request)
    if fmt in _LOG_READERS:
        if request.cluster is not None:
            raise UsageError(
                f"--cluster applies to per-model JSON files, not to {fmt} input ({path})",
                hint="rows files carry a cluster column; lm-eval and Inspect logs their own",
            )
        return _outputs_of_items(read_eval_items(fmt, [p], request.query).tasks, path, fmt)
    if fmt not in ("auto", "fields", "mmlu-pro"):
        known = ", ".join(["mmlu-pro", "fields", *_LOG_READERS])
        raise UsageError(f"--from {fmt!r} is not a leaderboard reader", hint=f"one of {known}")
    entries = load_entries(p)
    fields = request.fields
    if fields is None:
        first = next((e for e in entries if isinstance(e, dict)), {})
        if fmt == "auto" and all(k in first for k in ("model", "item", "score")):
            return _outputs_of_items(read_eval_items("items", [p], request.query).tasks, path, "items")
        if fmt == "auto" and "eval" in first and "samples" in first:  # an Inspect .json log
            return _outputs_of_items(read_eval_items("inspect", [p], request.query).tasks, path, "inspect")
        if not is_mmlu_pro(entries) and entries and first:
            raise InputError(
                f"no reader knows these records (fields: {', '.join(list(first)[:8])})",
                path=p,
                hint="map them: --item FIELD and --score FIELD, or --pred FIELD --answer FIELD",
            )
        fields = FieldMap(item="question_id", pred="pred", answer="answer", cluster=request.cluster)
    return [(model_name_of(p), outputs_from_entries(entries, fields, p))]


def _named_outputs(request: LeaderboardRequest) -> list[tuple[str, ModelOutputs]]:
    if request.labels and request.paths:
        raise UsageError("give the files or labelled files (-l NAME=PATH), not both")
    if not request.labels and not request.paths:
        raise UsageError("no model outputs to read", hint="pass one per-item file per model, or -l NAME=PATH")
    named: list[tuple[str, ModelOutputs]] = []
    for lab in request.labels:
        found = _read_one(lab.path, request)
        if lab.selector is not None:
            found = [(m, o) for m, o in found if m == lab.selector]
        if len(found) != 1:
            raise UsageError(
                f"label {lab.label}: {lab.path} holds {len(found)} models", hint="NAME=PATH:MODEL picks one"
            )
        named.append((lab.label, found[0][1]))
    for path in request.paths:
        found = _read_one(path, request)
        named.extend((model_name_of(path), o) if len(found) == 1 else (m, o) for m, o in found)
    names = [n for n, _ in named]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        where = ", ".join(o.path for n, o in named if n == twice)
        raise UsageError(f"two models are named {twice!r} ({where})", hint="name them apart: -l NAME=PATH")
    return named


def read_score_matrix(request: LeaderboardRequest) -> ScoreMatrix:
    """Read every model and align them on the union of their items (first-seen order).

    Raises:
        UsageError: files and labels both or neither given, two models with one name, a label's path
            holding several models.
        InputError: what the readers raise (an empty file, no records, a missing field).
    """
    from expkit.stats.leaderboard import ScoreMatrix

    named = _named_outputs(request)
    index: dict[str, int] = {}
    cluster_of: dict[str, str] = {}
    for _, out in named:
        for k, item in enumerate(out.items):
            index.setdefault(item, len(index))
            if out.clusters is not None:
                cluster_of.setdefault(item, out.clusters[k])
    n = len(index)
    scores = np.full((len(named), n), np.nan)
    unparsed = np.zeros((len(named), n), dtype=bool)
    notes = []
    for row, (name, out) in enumerate(named):
        cols = np.fromiter((index[i] for i in out.items), dtype=np.int64, count=len(out.items))
        scores[row, cols], unparsed[row, cols] = out.scores, out.unparsed
        if out.skipped:
            notes.append(f"{name}: {out.skipped} entries of {out.path} are not records, skipped")
        if len(out.items) < n:
            notes.append(f"{name}: scored {len(out.items)} of the {n} items; pairs compare on common items")
    clusters = None
    if cluster_of:
        ids = {c: k for k, c in enumerate(dict.fromkeys(cluster_of.get(i, f"item:{i}") for i in index))}
        clusters = np.array([ids[cluster_of.get(i, f"item:{i}")] for i in index], dtype=np.int64)
    answers = frozenset().union(*(o.answers for _, o in named))
    return ScoreMatrix(
        tuple(n for n, _ in named),
        scores,
        unparsed,
        clusters,
        tuple(o.skipped for _, o in named),
        len(answers) if len(answers) >= 2 else None,
        tuple(notes),
        items=tuple(index),
    )


def _match(name: str, models: Sequence[str], path: str) -> str:
    """The model a published name refers to: exact, else the one model whose name contains it."""
    if name in models:
        return name
    hits = [m for m in models if name in m]
    if len(hits) == 1:
        return hits[0]
    hint = f"models: {', '.join(models)}" if not hits else f"it matches {', '.join(hits)}"
    raise InputError(f"published model {name!r} matches {len(hits)} models", path=path, hint=hint)


def read_published(path: str, models: Sequence[str]) -> dict[str, float]:
    """A CSV ``model,score`` (percent, or fractions when every score is <= 1) as model -> fraction.

    Raises:
        InputError: no such file, no ``model``/``score`` columns, a score that is not a number, a name
            matching no model or several.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p, hint="a CSV with columns model,score")
    rows = list(csv.DictReader(io.StringIO(p.read_text(encoding="utf-8-sig"))))
    if not rows or not {"model", "score"} <= set(rows[0]):
        raise InputError("needs the columns model and score", path=p, hint="model,score\\nQwen1.5-72B-Chat,52.64")
    values: dict[str, float] = {}
    for line, row in enumerate(rows, 2):
        try:
            values[_match(str(row["model"]).strip(), models, path)] = float(row["score"])
        except (TypeError, ValueError):
            raise InputError(f"score {row['score']!r} is not a number", path=p, line=line) from None
    percent = any(v > 1.0 for v in values.values())
    return {m: v / 100.0 if percent else v for m, v in values.items()}


def build_leaderboard_from(request: LeaderboardRequest, *, matrix: ScoreMatrix | None = None) -> Leaderboard:
    """Read the models' outputs and the published table, and build the leaderboard. ``matrix``: the outputs
    already read with :func:`read_score_matrix` for this request (a caller that also needs the items).

    Raises:
        UsageError, InputError: what :func:`read_score_matrix`, :func:`read_published` and
            :func:`~expkit.stats.leaderboard.build_leaderboard` raise.
    """
    from expkit.stats.leaderboard import build_leaderboard, parse_unparsed_policy

    policy = parse_unparsed_policy(request.unparsed)
    matrix = read_score_matrix(request) if matrix is None else matrix
    published = read_published(request.published, matrix.names) if request.published else None
    return build_leaderboard(
        matrix,
        policy=policy,
        adjust=request.adjust,
        level=request.level,
        seed=request.seed,
        n_boot=request.n_boot,
        published=published,
    )
