"""What a lab is: the seed's figures for a claim, a ``run`` that measures them, and the result.

A lab never copies a seed figure into its result. It measures with library code; the seed figure is
carried beside the measurement only so the report can show both and a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = [
    "Lab",
    "LabContext",
    "LabOutput",
    "LabResult",
    "Measurement",
    "SeedFigure",
    "Verdict",
    "verdict_within",
]

VerdictKind = Literal["reproduced", "differs", "not reproduced"]
Value = float | int | str | bool | None


@dataclass(frozen=True)
class SeedFigure:
    """A figure as the seed states it (CLAIMS.md), with the number parsed out when there is one."""

    key: str
    label: str
    value: float | None
    unit: str
    text: str


@dataclass(frozen=True)
class Verdict:
    """``reproduced``, ``differs`` (with the reason hardware or data explain), or ``not reproduced``."""

    kind: VerdictKind
    reason: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}" if self.reason else self.kind


@dataclass(frozen=True)
class Measurement:
    """One figure measured here, the seed figure it answers (if any) and the verdict.

    A supporting figure with no seed counterpart has ``verdict=None`` and shows as "-".
    """

    key: str
    label: str
    value: Value
    unit: str
    verdict: Verdict | None = None
    seed: SeedFigure | None = None
    detail: str = ""


@dataclass(frozen=True)
class LabOutput:
    """What a lab's ``run`` returns: measurements, a few sentences, and figure files it wrote."""

    measurements: tuple[Measurement, ...]
    explanation: str
    figures: tuple[Path, ...] = ()


@dataclass(frozen=True)
class LabContext:
    """Passed to ``run``: the budget, where to write figures, and the root seed."""

    quick: bool
    out_dir: Path
    seed: int = 0

    def figure_path(self, name: str) -> Path:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return self.out_dir / name


@dataclass(frozen=True)
class LabResult:
    """A lab as it ran: ``status`` is ``ok`` or ``failed`` (then ``error`` holds the traceback)."""

    id: str
    title: str
    claims: tuple[str, ...]
    status: Literal["ok", "failed"]
    budget: Literal["quick", "full"]
    elapsed_s: float
    measurements: tuple[Measurement, ...] = ()
    explanation: str = ""
    figures: tuple[str, ...] = ()
    error: str | None = None
    seed_figures: tuple[SeedFigure, ...] = ()


@dataclass(frozen=True)
class Lab:
    """A registered lab. ``run`` gets a LabContext and returns a LabOutput."""

    id: str
    title: str
    claims: tuple[str, ...]
    seed_figures: tuple[SeedFigure, ...]
    run: Callable[[LabContext], LabOutput] = field(repr=False)
    module: str = ""

    def seed_figure(self, key: str) -> SeedFigure:
        for fig in self.seed_figures:
            if fig.key == key:
                return fig
        raise KeyError(f"lab {self.id} declares no seed figure {key!r}")


def verdict_within(
    measured: float,
    seed: float,
    *,
    rel_tol: float | None = None,
    abs_tol: float | None = None,
    differs_reason: str | None = None,
) -> Verdict:
    """``reproduced`` when ``measured`` is within tolerance of ``seed``; otherwise ``differs`` with
    ``differs_reason`` when the lab knows why (hardware, data), else ``not reproduced``.
    """
    if rel_tol is None and abs_tol is None:
        raise ValueError("give rel_tol or abs_tol")
    if math.isnan(measured):
        return Verdict("not reproduced", "the measurement is NaN")
    ok = math.isclose(measured, seed, rel_tol=rel_tol or 0.0, abs_tol=abs_tol or 0.0)
    if ok:
        return Verdict("reproduced")
    if differs_reason:
        return Verdict("differs", differs_reason)
    return Verdict("not reproduced", f"measured {measured:.4g} vs seed {seed:.4g}")


def claims_of(labs: Sequence[Lab]) -> list[str]:
    return sorted({c for lab in labs for c in lab.claims})
