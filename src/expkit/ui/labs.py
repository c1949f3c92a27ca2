"""The labs report as the web view shows it: read from the report folder's ``results.json`` (what
``expkit labs run`` wrote), with a table of contents, verdict counts that link to the labs holding them,
and each lab's figures before its table.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import InputError

__all__ = ["LabsPage", "labs_page"]

_VERDICT_ORDER = ("reproduced", "demonstrated", "differs", "not reproduced", "not measured here", "no verdict")


@dataclass(frozen=True)
class LabsPage:
    """``results`` as written; ``counts[verdict]`` the measurements of that verdict and ``labs_by_verdict``
    the labs holding at least one; ``figures`` every figure file the report names (the only files served)."""

    folder: Path
    header: dict[str, Any]
    results: tuple[dict[str, Any], ...]
    counts: dict[str, int]
    labs_by_verdict: dict[str, tuple[str, ...]]
    figures: tuple[str, ...]

    def figure_path(self, name: str) -> Path | None:
        """The file of figure ``name`` (a key of ``figure_key``) when the report names it, else None."""
        for rel in self.figures:
            if figure_key(rel) == name:
                path = (self.folder / rel).resolve()
                return path if path.is_file() and path.is_relative_to(self.folder.resolve()) else None
        return None


def figure_key(rel: str) -> str:
    """A figure's name in URLs: its report-relative path with ``/`` as ``~`` (one path segment)."""
    return rel.replace("/", "~")


def _verdict_of(m: dict[str, Any]) -> str:
    v = m.get("verdict")
    return str(v.get("kind")) if isinstance(v, dict) and v.get("kind") else "no verdict"


def labs_page(folder: Path) -> LabsPage:
    """Read ``folder/results.json``.

    Raises:
        InputError: no ``results.json`` there, or one that is not a labs report.
    """
    path = folder / "results.json"
    if not path.is_file():
        raise InputError("no results.json in the report folder", path=folder, hint="run `expkit labs run --out DIR`")
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc}", path=path) from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError("not a labs report (no results list)", path=path)
    results = tuple(r for r in data["results"] if isinstance(r, dict))
    counts: Counter[str] = Counter()
    labs: dict[str, list[str]] = {}
    figures: list[str] = []
    for r in results:
        for m in r.get("measurements") or ():
            kind = _verdict_of(m)
            counts[kind] += 1
            if str(r.get("id")) not in labs.setdefault(kind, []):
                labs[kind].append(str(r.get("id")))
        figures += [f for f in r.get("figures") or () if isinstance(f, str)]
    order = [k for k in _VERDICT_ORDER if k in counts] + sorted(set(counts) - set(_VERDICT_ORDER))
    header = {k: v for k, v in data.items() if k != "results"}
    return LabsPage(
        folder=folder,
        header=header,
        results=results,
        counts={k: counts[k] for k in order},
        labs_by_verdict={k: tuple(labs[k]) for k in order},
        figures=tuple(figures),
    )
