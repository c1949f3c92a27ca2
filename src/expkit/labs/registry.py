"""Find labs: every module ``expkit/labs/lab_*.py`` registers its labs with ``@lab(...)``.

Lab modules import only light things at module level (heavy imports go inside ``run``), so
``expkit labs list`` stays fast.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Sequence

from expkit.errors import UsageError
from expkit.labs.base import Lab, LabContext, LabOutput, SeedFigure

__all__ = ["all_labs", "lab", "select_labs"]

_REGISTRY: dict[str, Lab] = {}


def lab(
    *, id: str, title: str, claims: Sequence[str], seed: Sequence[SeedFigure] = ()
) -> Callable[[Callable[[LabContext], LabOutput]], Callable[[LabContext], LabOutput]]:
    """Register ``run`` as the lab ``id`` covering ``claims``, with the seed's figures."""

    def register(run: Callable[[LabContext], LabOutput]) -> Callable[[LabContext], LabOutput]:
        if id in _REGISTRY and _REGISTRY[id].module != run.__module__:
            raise RuntimeError(f"lab id {id} registered twice ({_REGISTRY[id].module}, {run.__module__})")
        _REGISTRY[id] = Lab(
            id=id, title=title, claims=tuple(claims), seed_figures=tuple(seed), run=run, module=run.__module__
        )
        return run

    return register


def _natural_key(lab_id: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", lab_id)]


def all_labs() -> list[Lab]:
    """Every lab, imported on first call, sorted by ID (C1.1, C1.2, ..., C2.10)."""
    import expkit.labs as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("lab_"):
            importlib.import_module(f"expkit.labs.{info.name}")
    return sorted(_REGISTRY.values(), key=lambda entry: _natural_key(entry.id))


def select_labs(ids: Sequence[str]) -> list[Lab]:
    """Labs named by lab ID or by a claim ID they cover (case-insensitive); all when ``ids`` is empty.

    Raises:
        UsageError: an ID matching no lab, with the known lab IDs.
    """
    labs = all_labs()
    if not ids:
        return labs
    chosen: list[Lab] = []
    for wanted in ids:
        w = wanted.strip().upper()
        hits = [entry for entry in labs if entry.id.upper() == w or w in (c.upper() for c in entry.claims)]
        if not hits:
            known = ", ".join(entry.id for entry in labs)
            raise UsageError(f"no lab or claim {wanted!r}", hint=f"known labs: {known}")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen
