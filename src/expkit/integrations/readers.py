"""Eval-log readers in a registry: one ``EvalReader`` per format (per-item rows, lm-eval, Inspect ...).

A new harness is one module that calls :func:`register_reader`; ``expkit stats table --from NAME`` lists
and accepts it without a change to the CLI. A reader turns its files into per-task, per-model item
scores (:class:`~expkit.stats.tables.TaskResults`); :func:`build_table_from` then builds the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from expkit.errors import UsageError

if TYPE_CHECKING:  # stats (numpy) is imported when a table is built, not when --help lists the readers
    from expkit.stats.paired import Pairing
    from expkit.stats.tables import EvalTable, TaskResults, TaskTables

__all__ = [
    "EvalItems",
    "EvalQuery",
    "EvalReader",
    "LabelledSource",
    "TableRequest",
    "build_table_from",
    "eval_reader",
    "eval_readers",
    "parse_label",
    "read_eval_items",
    "read_labelled_items",
    "register_reader",
]


@dataclass(frozen=True)
class EvalQuery:
    """What to take from multi-task logs; a reader that has no such choice accepts none of them.

    ``tasks``: tasks to compare (None: every task all models have). ``metric``: the per-item metric or
    scorer (None: the first logged). ``filter_name``: lm-eval's answer filter (None: the first logged).
    """

    tasks: tuple[str, ...] | None = None
    metric: str | None = None
    filter_name: str | None = None
    model: str | None = None

    def given(self) -> tuple[str, ...]:
        """The choices set in this query, by field name (``tasks``, ``metric``, ``filter_name``, ``model``)."""
        fields = (("tasks", self.tasks), ("metric", self.metric), ("filter_name", self.filter_name))
        return tuple(k for k, v in (*fields, ("model", self.model)) if v)

    def with_choice(self, field: str, value: str) -> EvalQuery:
        """This query with one single-valued choice (``metric``, ``filter_name`` or ``model``) set to ``value``."""
        if field == "metric":
            return replace(self, metric=value)
        if field == "filter_name":
            return replace(self, filter_name=value)
        if field == "model":
            return replace(self, model=value)
        raise UsageError(f"a label cannot set {field!r}", hint="selectors set metric, filter_name or model")


@dataclass(frozen=True)
class EvalItems:
    """What a reader found: per-task item scores and notes on what it chose or left out.

    ``single_table``: the files hold one table with no task axis (per-item rows): the table is then one
    :class:`EvalTable`, not :class:`TaskTables`.
    """

    tasks: tuple[TaskResults, ...]
    notes: tuple[str, ...] = ()
    single_table: bool = False


class EvalReader(Protocol):
    """One eval-log format. ``name`` is what ``--from`` takes; ``accepts`` the EvalQuery fields it uses;
    ``selector`` the EvalQuery field a label's ``NAME=PATH:SELECTOR`` sets (None: labels take no selector).

    ``read`` returns what the files hold, one model or several: whether there is something to compare is
    decided by :func:`build_table_from`, which also builds one comparison out of several labelled reads.
    """

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def accepts(self) -> frozenset[str]: ...
    @property
    def selector(self) -> str | None: ...

    def sniff(self, path: Path) -> bool:
        """Whether ``path`` looks like this format (cheap: a suffix, a file name, a first line)."""
        ...

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        """The item scores in ``paths`` (InputError naming file and line for bad data)."""
        ...


_READERS: dict[str, EvalReader] = {}


def register_reader(reader: EvalReader) -> EvalReader:
    """Add ``reader`` under ``reader.name`` (a second reader with a taken name is a UsageError)."""
    _register_builtin()
    if reader.name in _READERS and _READERS[reader.name] is not reader:
        raise UsageError(f"an eval reader named {reader.name!r} is already registered")
    _READERS[reader.name] = reader
    return reader


def eval_readers() -> dict[str, EvalReader]:
    """Every registered reader by name, the built-in ones first (items, lm-eval, inspect)."""
    _register_builtin()
    return dict(_READERS)


def eval_reader(name: str) -> EvalReader:
    """The reader called ``name``.

    Raises:
        UsageError: no reader has that name (the known ones listed).
    """
    readers = eval_readers()
    if name not in readers:
        raise UsageError(f"no eval reader is called {name!r}", hint=f"readers: {', '.join(readers)}")
    return readers[name]


def read_eval_items(name: str, paths: Sequence[str | Path], query: EvalQuery = EvalQuery()) -> EvalItems:
    """Read ``paths`` with the reader called ``name``, refusing a query choice that reader does not use.

    Raises:
        UsageError: unknown reader; a choice (tasks, metric, filter_name) the reader does not take.
    """
    reader = eval_reader(name)
    for field in query.given():
        if field not in reader.accepts:
            takers = [r.name for r in eval_readers().values() if field in r.accepts]
            raise UsageError(
                f"a {field} choice applies to {' or '.join(takers) or 'no reader'}, not to {name}",
                hint=reader.description,
            )
    return reader.read([Path(p) for p in paths], query)


@dataclass(frozen=True)
class LabelledSource:
    """One run under a name of the user's choosing: ``label=path[:selector]`` (``zero-shot=out/0shot``,
    ``strict=out/run:strict-match``). The selector sets the reader's ``selector`` field of the query
    (lm-eval: the filter; Inspect: the scorer; per-item rows: the model in the file)."""

    label: str
    path: str
    selector: str | None = None


def parse_label(text: str) -> LabelledSource:
    """``NAME=PATH`` or ``NAME=PATH:SELECTOR``; a PATH that exists as written keeps any ``:`` it holds.

    Raises:
        UsageError: no ``=``, or an empty name, path or selector.

    Example:
        >>> parse_label("two-shot=out/2shot:strict-match")
        LabelledSource(label='two-shot', path='out/2shot', selector='strict-match')
    """
    name, eq, rest = text.partition("=")
    if not eq or not name.strip() or not rest:
        raise UsageError(f"label {text!r} is not NAME=PATH[:SELECTOR]", hint="e.g. zero-shot=out/0shot")
    if Path(rest).exists() or ":" not in rest:
        return LabelledSource(name.strip(), rest)
    path, _, selector = rest.rpartition(":")
    if not path or not selector:
        raise UsageError(f"label {text!r} is not NAME=PATH[:SELECTOR]", hint="e.g. strict=out/run:strict-match")
    return LabelledSource(name.strip(), path, selector)


@dataclass(frozen=True)
class TableRequest:
    """An eval table to build: which reader, which files (or labelled runs), what to take from them and how
    to compare. ``pairing``: ``shared`` pairs each model with the baseline on the items both have (the
    dropped counts noted), ``unpaired`` compares all items unpaired."""

    reader: str
    paths: tuple[str, ...]
    query: EvalQuery = EvalQuery()
    baseline: str | None = None
    level: float = 0.95
    seed: int = 0
    labels: tuple[LabelledSource, ...] = ()
    pairing: Pairing = "shared"


def build_table_from(request: TableRequest) -> EvalTable | TaskTables:
    """Read the files with the named reader and build the table: one EvalTable for per-item rows, else
    one table per task with Holm over every comparison (:func:`~expkit.stats.tables.build_task_tables`).
    With ``labels`` each labelled path is read alone and its one model renamed to the label, so two runs
    of one model (0-shot and 2-shot, two prompts, two filters) compare like two models.

    Raises:
        UsageError: paths and labels both given or neither; a task with fewer than two models; what the
            reader raises.
    """
    from expkit.stats.tables import build_eval_table, build_task_tables

    if request.labels and request.paths:
        raise UsageError("give the result files or labelled runs (NAME=PATH), not both")
    if request.labels:
        items = read_labelled_items(request.reader, request.labels, request.query)
    elif request.paths:
        items = read_eval_items(request.reader, request.paths, request.query)
    else:
        raise UsageError("no results to read", hint="pass the result files, or labelled runs as NAME=PATH")
    for t in items.tasks:
        if len(t.results.models) < 2:
            where = ", ".join(t.sources) or ", ".join(request.paths)
            raise UsageError(
                f"found one model ({', '.join(t.results.models)}) in {where}; a comparison needs two",
                hint="pass one output per model, or label two runs of one model: NAME=PATH NAME=PATH",
            )
    if items.single_table:
        (only,) = items.tasks
        return build_eval_table(
            only.results, baseline=request.baseline, level=request.level, seed=request.seed, pairing=request.pairing
        )
    return build_task_tables(
        list(items.tasks),
        source=request.reader,
        baseline=request.baseline,
        level=request.level,
        seed=request.seed,
        notes=items.notes,
        pairing=request.pairing,
    )


def read_labelled_items(name: str, labels: Sequence[LabelledSource], query: EvalQuery = EvalQuery()) -> EvalItems:
    """Read each labelled path alone with the reader called ``name`` and merge them: per task, the one model
    each path holds becomes the label. Tasks not read for every label are left out (noted).

    Raises:
        UsageError: a label used twice; a selector for a reader that takes none; a path holding several
            models for a task (select one, or label each run's own path); no task common to every label.
    """
    from expkit.stats.tables import ItemResults, TaskResults

    reader = eval_reader(name)
    seen = [lab.label for lab in labels]
    twice = sorted({x for x in seen if seen.count(x) > 1})
    if twice:
        raise UsageError(f"label {twice[0]!r} is given twice", hint="give each run its own name")
    per_label: list[tuple[LabelledSource, EvalItems]] = []
    for lab in labels:
        q = query
        if lab.selector is not None:
            field = getattr(reader, "selector", None)  # a reader registered before selectors takes none
            if field is None:
                raise UsageError(f"label {lab.label}: the {name} reader takes no :SELECTOR", hint=reader.description)
            q = query.with_choice(field, lab.selector)
        per_label.append((lab, read_eval_items(name, [lab.path], q)))
    notes: list[str] = []
    task_names = list(dict.fromkeys(t.task for _, found in per_label for t in found.tasks))
    common = [t for t in task_names if all(any(x.task == t for x in found.tasks) for _, found in per_label)]
    if not common:
        raise UsageError("the labelled runs share no task", hint="label runs of the same tasks")
    if len(common) < len(task_names):
        notes.append(f"tasks not read for every label, left out: {', '.join(t for t in task_names if t not in common)}")
    out = []
    for task in common:
        scores: dict[str, dict[str, float]] = {}
        clusters: dict[str, str] = {}
        any_clusters, names, sources = False, [], list[str]()
        for lab, found in per_label:
            tr = next(x for x in found.tasks if x.task == task)
            if len(tr.results.models) != 1:
                selects_model = getattr(reader, "selector", None) == "model"
                hint = "label one model's own output" + (", or select one as NAME=PATH:MODEL" if selects_model else "")
                raise UsageError(
                    f"label {lab.label}: {lab.path} holds {len(tr.results.models)} models for "
                    f"{task or 'its rows'} ({', '.join(tr.results.models)})",
                    hint=hint,
                )
            scores[lab.label] = tr.results.scores[tr.results.models[0]]
            if tr.results.clusters is not None:
                any_clusters = True
                clusters.update(tr.results.clusters)
            names.append(f"{lab.label}={tr.results.path} [{tr.results.models[0]}]")
            sources.extend(tr.sources)
        results = ItemResults(
            "; ".join(names),
            tuple(scores),
            scores,
            clusters if any_clusters else None,
            sum(len(v) for v in scores.values()),
        )
        out.append(TaskResults(task, results, tuple(sources)))
    for lab, found in per_label:
        notes.extend(f"{lab.label}: {n}" for n in found.notes)
    single = all(found.single_table for _, found in per_label)
    return EvalItems(tuple(out), tuple(notes), single_table=single)


# --- the built-in readers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRowsReader:
    """Per-item rows: JSONL or CSV with model, item, score[, cluster], every model in one file."""

    name: str = "items"
    description: str = "items: one JSONL or CSV file with model, item, score[, cluster] per row"
    accepts: frozenset[str] = frozenset({"model"})
    selector: str | None = "model"

    def sniff(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() in (".jsonl", ".json", ".csv", ".tsv", ".gz")

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        from expkit.stats.tables import TaskResults, read_item_results

        if len(paths) != 1:
            raise UsageError(
                f"one results file expected, got {len(paths)}",
                hint="put every model's rows in one file, or read lm-eval / inspect logs",
            )
        results = read_item_results(paths[0])
        if query.model is not None:  # one model of the file, for a labelled comparison
            if query.model not in results.scores:
                raise UsageError(f"no model {query.model!r} in {paths[0]}", hint=f"models: {', '.join(results.models)}")
            only = {query.model: results.scores[query.model]}
            results = replace(results, models=(query.model,), scores=only, n_rows=len(only[query.model]))
        return EvalItems((TaskResults("", results, (str(paths[0]),)),), single_table=True)


@dataclass(frozen=True)
class LmEvalReader:
    """lm-evaluation-harness ``--output_path`` directories written with ``--log_samples``."""

    name: str = "lm-eval"
    description: str = "lm-eval: the lm_eval --output_path directories (with --log_samples), one per model"
    accepts: frozenset[str] = frozenset({"tasks", "metric", "filter_name"})
    selector: str | None = "filter_name"

    def sniff(self, path: Path) -> bool:
        return path.is_dir() and any(path.rglob("results_*.json"))

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        from expkit.integrations.lmeval import read_lmeval_tasks

        return read_lmeval_tasks(
            paths, tasks=query.tasks, metric=query.metric, filter_name=query.filter_name, min_models=1
        )


@dataclass(frozen=True)
class InspectReader:
    """Inspect AI logs: ``.eval`` archives or ``.json`` EvalLogs, one per (task, model), or their folders."""

    name: str = "inspect"
    description: str = "inspect: the .eval/.json logs of inspect eval (or their --log-dir)"
    accepts: frozenset[str] = frozenset({"tasks", "metric"})
    selector: str | None = "metric"

    def sniff(self, path: Path) -> bool:
        return path.suffix == ".eval" or (path.is_dir() and any(path.glob("*.eval")))

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        from expkit.integrations.inspect_logs import read_inspect_tasks

        return read_inspect_tasks(paths, tasks=query.tasks, metric=query.metric, min_models=1)


def _register_builtin() -> None:
    from expkit.integrations.item_files import MmluProReader  # it imports this module's EvalItems

    for reader in (ItemRowsReader(), LmEvalReader(), InspectReader(), MmluProReader()):
        _READERS.setdefault(reader.name, reader)
