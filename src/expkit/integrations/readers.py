"""Eval-log readers in a registry: one ``EvalReader`` per format (per-item rows, lm-eval, Inspect ...).

A new harness is one module that calls :func:`register_reader`; ``expkit stats table --from NAME`` lists
and accepts it without a change to the CLI. A reader turns its files into per-task, per-model item
scores (:class:`~expkit.stats.tables.TaskResults`); :func:`build_table_from` then builds the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from expkit.errors import UsageError

if TYPE_CHECKING:  # stats (numpy) is imported when a table is built, not when --help lists the readers
    from expkit.stats.tables import EvalTable, TaskResults, TaskTables

__all__ = [
    "EvalItems",
    "EvalQuery",
    "EvalReader",
    "TableRequest",
    "build_table_from",
    "eval_reader",
    "eval_readers",
    "read_eval_items",
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

    def given(self) -> tuple[str, ...]:
        """The choices set in this query, by field name (``tasks``, ``metric``, ``filter_name``)."""
        return tuple(
            k for k, v in (("tasks", self.tasks), ("metric", self.metric), ("filter_name", self.filter_name)) if v
        )


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
    """One eval-log format. ``name`` is what ``--from`` takes; ``accepts`` the EvalQuery fields it uses."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def accepts(self) -> frozenset[str]: ...

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
class TableRequest:
    """An eval table to build: which reader, which files, what to take from them and how to compare."""

    reader: str
    paths: tuple[str, ...]
    query: EvalQuery = EvalQuery()
    baseline: str | None = None
    level: float = 0.95
    seed: int = 0


def build_table_from(request: TableRequest) -> EvalTable | TaskTables:
    """Read the files with the named reader and build the table: one EvalTable for per-item rows, else
    one table per task with Holm over every comparison (:func:`~expkit.stats.tables.build_task_tables`)."""
    from expkit.stats.tables import build_eval_table, build_task_tables

    items = read_eval_items(request.reader, request.paths, request.query)
    if items.single_table:
        (only,) = items.tasks
        return build_eval_table(only.results, baseline=request.baseline, level=request.level, seed=request.seed)
    return build_task_tables(
        list(items.tasks),
        source=request.reader,
        baseline=request.baseline,
        level=request.level,
        seed=request.seed,
        notes=items.notes,
    )


# --- the built-in readers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRowsReader:
    """Per-item rows: JSONL or CSV with model, item, score[, cluster], every model in one file."""

    name: str = "items"
    description: str = "items: one JSONL or CSV file with model, item, score[, cluster] per row"
    accepts: frozenset[str] = frozenset()

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
        return EvalItems((TaskResults("", results, (str(paths[0]),)),), single_table=True)


@dataclass(frozen=True)
class LmEvalReader:
    """lm-evaluation-harness ``--output_path`` directories written with ``--log_samples``."""

    name: str = "lm-eval"
    description: str = "lm-eval: the lm_eval --output_path directories (with --log_samples), one per model"
    accepts: frozenset[str] = frozenset({"tasks", "metric", "filter_name"})

    def sniff(self, path: Path) -> bool:
        return path.is_dir() and any(path.rglob("results_*.json"))

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        from expkit.integrations.lmeval import read_lmeval_tasks

        return read_lmeval_tasks(paths, tasks=query.tasks, metric=query.metric, filter_name=query.filter_name)


@dataclass(frozen=True)
class InspectReader:
    """Inspect AI logs: ``.eval`` archives or ``.json`` EvalLogs, one per (task, model), or their folders."""

    name: str = "inspect"
    description: str = "inspect: the .eval/.json logs of inspect eval (or their --log-dir)"
    accepts: frozenset[str] = frozenset({"tasks", "metric"})

    def sniff(self, path: Path) -> bool:
        return path.suffix == ".eval" or (path.is_dir() and any(path.glob("*.eval")))

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        from expkit.integrations.inspect_logs import read_inspect_tasks

        return read_inspect_tasks(paths, tasks=query.tasks, metric=query.metric)


def _register_builtin() -> None:
    for reader in (ItemRowsReader(), LmEvalReader(), InspectReader()):
        _READERS.setdefault(reader.name, reader)
