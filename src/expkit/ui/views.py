"""What each page of the web view shows, as data: the same library calls the CLI makes (``list_runs`` as
``runs ls``, ``describe_run`` as ``runs show``, ``compare_groups`` as ``expkit compare``), so a number on a
page is the number the terminal prints. Nothing here renders HTML; ``ui.server`` does.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import ExpkitError, UsageError
from expkit.runs.columns import differing_keys, flatten_config
from expkit.runs.records import RunView, describe_run
from expkit.runs.store import (
    BrokenRun,
    RunListing,
    RunSummary,
    find_run_dir,
    list_runs,
    read_record,
    resolve_status,
)

__all__ = [
    "LOG_TAIL_BYTES",
    "MAX_PAGE",
    "ListingCache",
    "RunPage",
    "RunsPage",
    "RunsQuery",
    "SweepPage",
    "run_dir_status",
    "run_page",
    "runs_page",
    "sweep_page",
    "sweeps_of",
]

MAX_PAGE = 500  # rows per page at most: the server pages, the browser never holds 10,000 rows
MAX_METRIC_COLUMNS = 8  # final-metric columns at most (the most common names), the rest stay on the run page
LOG_TAIL_BYTES = 64 * 1024  # the output log's tail shown on a run's page
_FIXED_SORTS = ("created", "id", "name", "status", "group", "seed")


@dataclass(frozen=True)
class RunsQuery:
    """One request of the runs page: ``where`` as ``runs ls --where``, ``text`` a substring of id, name or
    group, ``sort`` a fixed column, ``config.KEY`` or ``metric.NAME``, then a page of ``limit`` rows."""

    where: tuple[str, ...] = ()
    text: str = ""
    sort: str = "created"
    descending: bool = True
    offset: int = 0
    limit: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise UsageError(f"limit {self.limit} is out of range", hint=f"use 1 to {MAX_PAGE}")
        if self.offset < 0:
            raise UsageError(f"offset {self.offset} is negative")
        if self.sort not in _FIXED_SORTS and not self.sort.startswith(("config.", "metric.")):
            raise UsageError(
                f"sort {self.sort!r} is not a column", hint=f"use {', '.join(_FIXED_SORTS)}, config.KEY or metric.NAME"
            )


@dataclass(frozen=True)
class RunsPage:
    """A page of the runs table. ``total``: rows matching the query (all pages); ``config_columns``: the
    flattened config keys that differ between those rows; ``newest``: the newest run's creation time, which
    the page polls to show new runs without a reload."""

    store: str
    total: int
    offset: int
    limit: int
    config_columns: tuple[str, ...]
    metric_columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    broken: tuple[BrokenRun, ...]
    notes: tuple[str, ...]
    newest: str | None
    running: int


def _sort_key(value: Any) -> tuple[int, Any]:
    """None and NaN last; numbers before text; text compared as text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (2, 0)
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode())


def _row(r: RunSummary, config: dict[str, Any], columns: tuple[str, ...], metrics: tuple[str, ...]) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.name,
        "status": r.status,
        "status_reason": r.status_reason,
        "diverged": r.diverged,
        "created_at": r.created_at,
        "group": r.group,
        "seed": r.seed,
        "config": {k: config.get(k) for k in columns},
        "metrics": {k: r.final_metrics.get(k) for k in metrics},
    }


@dataclass(frozen=True)
class _Listed:
    """A listing and what every page of it needs: each run's flattened config, and per text filter the runs
    and the keys that differ between them."""

    listing: RunListing
    flat: dict[str, dict[str, Any]]
    filtered: dict[str, tuple[list[RunSummary], tuple[str, ...]]]


class ListingCache:
    """``list_runs`` for the pages that poll it, kept while the store looks unchanged.

    ``list_runs`` stats every run's ``run.json`` (1-2 s for 10,000 runs here), too slow for a page polled
    every two seconds. A listing is kept while the store folder and its index (``index.sqlite`` and its WAL,
    which every run write updates) keep their modification times and sizes, and for ``ttl_s`` at most: a
    run whose process died without writing, or a writer that could not index, shows within ``ttl_s``.
    """

    def __init__(self, *, ttl_s: float = 10.0, keep: int = 16) -> None:
        self.ttl_s = ttl_s
        self.keep = keep
        self._kept: dict[tuple[str, ...], tuple[tuple[int, ...], float, _Listed]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _fingerprint(store: Path) -> tuple[int, ...]:
        out: list[int] = []
        for path in (store, store / "index.sqlite", store / "index.sqlite-wal"):
            try:
                st = path.stat()
                out += [st.st_mtime_ns, st.st_size]
            except OSError:
                out += [0, 0]
        return tuple(out)

    def listed(self, store: Path, where: tuple[str, ...]) -> _Listed:
        key = self._fingerprint(store)
        now = time.monotonic()
        with self._lock:
            kept = self._kept.get(where)
            if kept is not None and kept[0] == key and now - kept[1] < self.ttl_s:
                return kept[2]
        listing = list_runs(store, where=list(where))
        listed = _Listed(listing, {r.id: flatten_config(r.config) for r in listing.runs}, {})
        with self._lock:
            if len(self._kept) >= self.keep:
                self._kept.pop(next(iter(self._kept)))
            self._kept[where] = (self._fingerprint(store), now, listed)
        return listed


def _filtered(listed: _Listed, text: str) -> tuple[list[RunSummary], tuple[str, ...]]:
    """The runs whose id, name, group or status holds ``text`` and the config keys that differ among them."""
    if text not in listed.filtered:
        runs = list(listed.listing.runs)
        if text:
            needle = text.lower()
            runs = [r for r in runs if any(needle in (v or "").lower() for v in (r.id, r.name, r.group, r.status))]
        listed.filtered[text] = (runs, differing_keys([listed.flat[r.id] for r in runs]))
    runs, columns = listed.filtered[text]
    return list(runs), columns


def runs_page(store: Path, query: RunsQuery, *, cache: ListingCache | None = None) -> RunsPage:
    """The runs matching ``query``, sorted and cut to one page (see ``RunsQuery``); ``cache`` keeps the
    listing between the calls of a page that polls."""
    listed = (cache or ListingCache(ttl_s=0.0)).listed(store, query.where)
    listing, flat = listed.listing, listed.flat
    runs, columns = _filtered(listed, query.text)
    counts = Counter(k for r in runs for k in r.final_metrics if k != "step")
    metrics = tuple(k for k, _ in counts.most_common(MAX_METRIC_COLUMNS))
    if query.sort != "created":
        kind, _, key = query.sort.partition(".")
        if kind == "config":
            runs.sort(key=lambda r: _sort_key(flat[r.id].get(key)), reverse=query.descending)
        elif kind == "metric":
            runs.sort(key=lambda r: _sort_key(r.final_metrics.get(key)), reverse=query.descending)
        else:
            runs.sort(key=lambda r: _sort_key(getattr(r, query.sort)), reverse=query.descending)
    elif not query.descending:
        runs.reverse()  # list_runs gives newest first
    page = runs[query.offset : query.offset + query.limit]
    return RunsPage(
        store=listing.store,
        total=len(runs),
        offset=query.offset,
        limit=query.limit,
        config_columns=columns,
        metric_columns=metrics,
        rows=tuple(_row(r, flat[r.id], columns, metrics) for r in page),
        broken=listing.broken,
        notes=listing.notes,
        newest=max((r.created_at or "" for r in listing.runs), default=None),
        running=sum(r.status == "running" for r in listing.runs),
    )


@dataclass(frozen=True)
class RunPage:
    """One run: ``runs show``'s view (record, the seven records checked, doctor findings) and the output
    log's tail (``log_skipped_bytes`` of its start not shown)."""

    view: RunView
    run_dir: str
    log_tail: str
    log_skipped_bytes: int


def _log_tail(path: Path, run_dir: Path) -> tuple[str, int]:
    if not path.is_file():  # a FIFO in its place is never opened
        return "", 0
    if not path.resolve().is_relative_to(run_dir.resolve()):  # a log named or linked out of the run: not served
        return "", 0
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(0, size - LOG_TAIL_BYTES))
        data = f.read(LOG_TAIL_BYTES)
    return data.decode("utf-8", errors="replace"), max(0, size - LOG_TAIL_BYTES)


def run_page(store: Path, ref: str) -> RunPage:
    """The run ``ref`` (id, unique id prefix or name), as ``expkit runs show`` finds it."""
    view = describe_run(ref, store=store)
    run_dir = find_run_dir(store, view.record.id)
    tail, skipped = _log_tail(run_dir / (view.record.logs.output or "output.log"), run_dir)
    return RunPage(view=view, run_dir=str(run_dir), log_tail=tail, log_skipped_bytes=skipped)


def run_dir_status(store: Path, ref: str) -> tuple[Path, str]:
    """The directory and the status (a dead ``running`` run reads ``lost``) of run ``ref``: what a polling
    curve needs, without ``run_page``'s check of the seven records."""
    run_dir = find_run_dir(store, ref)
    return run_dir, resolve_status(store, read_record(run_dir)).status


@dataclass(frozen=True)
class SweepPage:
    """A sweep: its grid (config label -> seed -> the run's status), the configs early stopping stopped
    with the reason recorded, and each grid key's verdict as ``expkit compare GROUP --by KEY`` gives it (or
    why there is none)."""

    group: str
    grid_keys: tuple[str, ...]
    seeds: tuple[int, ...]
    cells: dict[str, dict[str, dict[str, Any]]]
    stopped: dict[str, str]
    verdicts: dict[str, Any]
    problems: dict[str, str]


def sweeps_of(store: Path) -> tuple[str, ...]:
    """The groups of ``store`` that a sweep planned (``groups/<group>.sweep.json``), sorted."""
    folder = store / "groups"
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.name[: -len(".sweep.json")] for p in folder.glob("*.sweep.json") if p.is_file()))


def _config_label(config: dict[str, Any], keys: tuple[str, ...]) -> str:
    return ",".join(f"{k}={config.get(k)}" for k in keys) or "-"


def sweep_page(store: Path, group: str) -> SweepPage:
    """The sweep ``group`` of ``store``: its plan, its runs by config and seed, and the verdicts."""
    from expkit.sweep.compare import compare_groups
    from expkit.sweep.plan import read_plan

    plan = read_plan(store, group)
    keys = tuple(k for k, _ in plan.grid)
    runs = list_runs(store, where=[f"group={group}"]).runs
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    stopped: dict[str, str] = {}
    for r in sorted(runs, key=lambda r: r.created_at or ""):
        label = _config_label(r.config, keys)
        cells.setdefault(label, {})[str(r.seed)] = {"id": r.id, "status": r.status, "metrics": r.final_metrics}
        if r.status == "stopped" and r.status_reason:
            stopped[label] = r.status_reason
    verdicts: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for key in keys:
        try:
            verdicts[key] = compare_groups(group, None, by=key, store=store)
        except ExpkitError as exc:  # shown on the page: why this key has no verdict (e.g. runs still running)
            problems[key] = str(exc)
    return SweepPage(
        group=group,
        grid_keys=keys,
        seeds=tuple(plan.seeds),
        cells=cells,
        stopped=stopped,
        verdicts=verdicts,
        problems=problems,
    )
