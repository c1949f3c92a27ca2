"""The evals page: the eval table ``expkit stats table`` builds from the files given to ``expkit ui
--evals`` (or, with ``--evals-from leaderboard``, the leaderboard ``expkit stats leaderboard`` builds from one
file per model), and the items on which two chosen models disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expkit.errors import UsageError
from expkit.integrations.readers import TableRequest, build_table_from, read_eval_items

__all__ = ["DISAGREE_PAGE", "LEADERBOARD", "EvalPage", "EvalSources", "eval_page"]

DISAGREE_PAGE = 100  # disagreeing items per page


LEADERBOARD = "leaderboard"  # the reader name that asks for `stats leaderboard` instead of `stats table`


@dataclass(frozen=True)
class EvalSources:
    """Eval result files and the reader that reads them (``--from`` of ``stats table``, or ``leaderboard``:
    one per-item file per model, read as ``stats leaderboard`` reads them)."""

    reader: str = "items"
    paths: tuple[str, ...] = ()

    def present(self) -> bool:
        return bool(self.paths)


@dataclass(frozen=True)
class EvalPage:
    """``tables``: what ``stats table`` prints for these files; ``a``/``b`` the two models compared item by
    item (of the first task), ``disagree`` a page of the items they score differently, ``n_disagree`` all of
    them, ``n_common`` the items both scored."""

    sources: EvalSources
    tables: tuple[Any, ...]
    leaderboard: Any
    models: tuple[str, ...]
    a: str | None
    b: str | None
    n_common: int
    n_disagree: int
    offset: int
    disagree: tuple[dict[str, Any], ...]


def eval_page(sources: EvalSources, *, a: str | None, b: str | None, offset: int = 0) -> EvalPage:
    """Build the table(s) and the disagreements of ``a`` and ``b`` (default: the first two models)."""
    if not sources.present():
        raise UsageError("no eval results given", hint="start with `expkit ui --evals results.jsonl`")
    if offset < 0:
        raise UsageError(f"offset {offset} is negative")
    if sources.reader == LEADERBOARD:
        return _leaderboard_page(sources, a=a, b=b, offset=offset)
    built = build_table_from(TableRequest(reader=sources.reader, paths=sources.paths))
    tables = tuple(getattr(built, "tables", (built,)))
    task = read_eval_items(sources.reader, sources.paths).tasks[0].results
    a, b = _chosen(task.models, a, b)
    sa, sb = task.scores[a], task.scores[b]
    common = [item for item in sa if item in sb]
    differ = [item for item in common if sa[item] != sb[item]]
    rows = tuple(
        {"item": item, "a": sa[item], "b": sb[item], "cluster": (task.clusters or {}).get(item)}
        for item in differ[offset : offset + DISAGREE_PAGE]
    )
    return EvalPage(sources, tables, None, task.models, a, b, len(common), len(differ), offset, rows)


def _chosen(models: tuple[str, ...], a: str | None, b: str | None) -> tuple[str, str]:
    a = a or models[0]
    b = b or (models[1] if len(models) > 1 else models[0])
    for name in (a, b):
        if name not in models:
            raise UsageError(f"no model {name!r} in the eval results", hint=f"models: {', '.join(models)}")
    return a, b


def _leaderboard_page(sources: EvalSources, *, a: str | None, b: str | None, offset: int) -> EvalPage:
    """``stats leaderboard``'s table, and the items two models score differently (unparsed answers as wrong,
    the leaderboard's default policy)."""
    import numpy as np

    from expkit.integrations.leaderboard_sources import LeaderboardRequest, build_leaderboard_from, read_score_matrix
    from expkit.stats.leaderboard import parse_unparsed_policy, policy_scores

    request = LeaderboardRequest(paths=sources.paths)
    matrix = read_score_matrix(request)
    board = build_leaderboard_from(request, matrix=matrix)
    a, b = _chosen(matrix.names, a, b)
    scores = policy_scores(matrix, parse_unparsed_policy(request.unparsed))
    sa, sb = scores[matrix.names.index(a)], scores[matrix.names.index(b)]
    both = ~np.isnan(sa) & ~np.isnan(sb)
    differ = np.flatnonzero(both & (sa != sb))
    items = matrix.items or tuple(str(k) for k in range(sa.size))
    rows = tuple(
        {"item": items[k], "a": float(sa[k]), "b": float(sb[k]), "cluster": None}
        for k in differ[offset : offset + DISAGREE_PAGE]
    )
    return EvalPage(sources, (), board, matrix.names, a, b, int(both.sum()), int(differ.size), offset, rows)
