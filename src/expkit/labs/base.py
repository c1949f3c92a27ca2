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
    "VERDICT_KINDS",
    "AtLeast",
    "AtMost",
    "Cause",
    "InBand",
    "KOfN",
    "Lab",
    "LabContext",
    "LabOutput",
    "LabResult",
    "Measurement",
    "Needs",
    "Rule",
    "SameSign",
    "SeedFigure",
    "Shown",
    "Verdict",
    "Within",
    "format_measured",
    "judged",
]

VerdictKind = Literal["reproduced", "differs", "not reproduced", "not measured here", "demonstrated"]
VERDICT_KINDS: tuple[VerdictKind, ...] = (
    "reproduced",
    "differs",
    "not reproduced",
    "not measured here",
    "demonstrated",
)
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
    """How a measured figure answers the seed.

    ``reproduced``: the rule holds. ``not reproduced``: it does not, and nothing measured here explains why.
    ``differs``: it does not, and a cause measured in the same run explains it (its figure is named).
    ``not measured here``: the measurement needs what this machine lacks (the reason says what).
    ``demonstrated``: a behavioural rule with no figure was shown to hold (never ``reproduced``).
    """

    kind: VerdictKind
    reason: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}" if self.reason else self.kind


@dataclass(frozen=True)
class Cause:
    """Why a figure differs here, itself measured in the same run: ``cores = 2: an 8-process ...``.

    A cause is a measurement (``value`` read off this machine or this run), never a platform guess.
    """

    label: str
    value: Value
    explains: str
    unit: str = ""

    def __str__(self) -> str:
        figure = f"{_fmt(self.value)} {self.unit}".strip()
        return f"{self.label} = {figure}: {self.explains}"


def _fmt(value: Value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# --- rules: a verdict comes from a rule declared with the measurement ---------------------------------


@dataclass(frozen=True)
class Rule:
    """A criterion a measured value is judged by. Subclasses define ``holds`` and ``text``.

    ``source`` says where a tolerance or band comes from when it is not the seed's own words
    (e.g. "our choice: run-to-run spread measured at 3%"); it is shown with the rule.
    """

    source: str = field(default="", kw_only=True)

    def holds(self, value: Value) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def text(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def __str__(self) -> str:
        return f"{self.text()} ({self.source})" if self.source else self.text()

    def __json__(self) -> str:
        return str(self)

    def judge(self, value: Value, *, cause: Cause | None = None) -> Verdict:
        """``reproduced`` when the rule holds; else ``differs`` with a measured ``cause``, else
        ``not reproduced``. A value that is missing or NaN never holds."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return Verdict("not reproduced", f"no finite measurement ({value}); rule: {self}")
        if self.holds(value):
            return Verdict("reproduced")
        if cause is not None:
            return Verdict("differs", str(cause))
        return Verdict("not reproduced", f"measured {_fmt(value)}, rule: {self}")


def _num(value: Value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a numeric rule needs a number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Within(Rule):
    """``|value - target| <= max(rel * |target|, abs)``: the seed's figure with a tolerance."""

    target: float
    rel: float | None = None
    abs: float | None = None

    def __post_init__(self) -> None:
        if self.rel is None and self.abs is None:
            raise ValueError("Within needs rel or abs")

    def holds(self, value: Value) -> bool:
        return math.isclose(_num(value), self.target, rel_tol=self.rel or 0.0, abs_tol=self.abs or 0.0)

    def text(self) -> str:
        tol = f"+-{self.rel * 100:g}%" if self.rel is not None else ""
        if self.abs is not None:
            tol = f"{tol} or +-{self.abs:g}" if tol else f"+-{self.abs:g}"
        return f"within {tol} of {_fmt(self.target)}"


@dataclass(frozen=True)
class AtMost(Rule):
    """``value <= limit``."""

    limit: float

    def holds(self, value: Value) -> bool:
        return _num(value) <= self.limit

    def text(self) -> str:
        return f"at most {_fmt(self.limit)}"


@dataclass(frozen=True)
class AtLeast(Rule):
    """``value >= limit``."""

    limit: float

    def holds(self, value: Value) -> bool:
        return _num(value) >= self.limit

    def text(self) -> str:
        return f"at least {_fmt(self.limit)}"


@dataclass(frozen=True)
class InBand(Rule):
    """``lo <= value <= hi``; say where the band comes from in ``source``."""

    lo: float
    hi: float

    def holds(self, value: Value) -> bool:
        return self.lo <= _num(value) <= self.hi

    def text(self) -> str:
        return f"in [{_fmt(self.lo)}, {_fmt(self.hi)}]"


@dataclass(frozen=True)
class SameSign(Rule):
    """The value has the sign of ``target`` (a direction, not a size)."""

    target: float

    def holds(self, value: Value) -> bool:
        v = _num(value)
        return v != 0 and (v > 0) == (self.target > 0)

    def text(self) -> str:
        return f"same sign as {_fmt(self.target)}"


@dataclass(frozen=True)
class KOfN(Rule):
    """The value is a count of cases that agree with the claim; at least ``k`` of ``n``."""

    k: int
    n: int

    def holds(self, value: Value) -> bool:
        return _num(value) >= self.k

    def text(self) -> str:
        return f"at least {self.k} of {self.n}"


@dataclass(frozen=True)
class Shown(Rule):
    """A behavioural rule with no figure: the value is True when ``what`` was shown to happen.

    Its verdict is ``demonstrated`` (never ``reproduced``) or ``not reproduced``.
    """

    what: str

    def holds(self, value: Value) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"Shown needs True/False, got {value!r}")
        return value

    def text(self) -> str:
        return f"shown: {self.what}"

    def judge(self, value: Value, *, cause: Cause | None = None) -> Verdict:
        verdict = super().judge(value, cause=cause)
        return Verdict("demonstrated", self.what) if verdict.kind == "reproduced" else verdict


@dataclass(frozen=True)
class Needs(Rule):
    """What the measurement needs and this machine lacks (``a CUDA GPU``). The lab chooses this rule
    only after checking the machine (``torch.cuda.is_available()``, the core count); the value is what
    was found (e.g. ``False`` for CUDA, or ``2`` cores)."""

    needs: str

    def holds(self, value: Value) -> bool:
        return False

    def text(self) -> str:
        return f"needs {self.needs}"

    def judge(self, value: Value, *, cause: Cause | None = None) -> Verdict:
        return Verdict("not measured here", f"needs {self.needs}; this machine has {_fmt(value)}")


@dataclass(frozen=True)
class Measurement:
    """One figure measured here, the seed figure it answers (if any) and the verdict.

    A supporting figure with no seed counterpart has ``verdict=None`` and shows as "-". A judged one
    carries the ``rule`` that gave its verdict; build it with :func:`judged`.
    """

    key: str
    label: str
    value: Value
    unit: str
    verdict: Verdict | None = None
    seed: SeedFigure | None = None
    detail: str = ""
    rule: Rule | None = None

    @property
    def rule_text(self) -> str | None:
        """``10.96 within +-10% of 10.9``: the measured value and the rule it was judged by."""
        if self.rule is None:
            return None
        return f"{format_measured(self.value, self.unit)}: {self.rule}"


@dataclass(frozen=True)
class LabOutput:
    """What a lab's ``run`` returns: measurements, a few sentences, and figure files it wrote."""

    measurements: tuple[Measurement, ...]
    explanation: str
    figures: tuple[Path, ...] = ()


@dataclass(frozen=True)
class LabContext:
    """Passed to ``run``: the budget, where to write figures, the root seed and the device.

    ``device`` is ``"cpu"`` or ``"cuda"``; labs with a CUDA path use it, the others run on the CPU.
    """

    quick: bool
    out_dir: Path
    seed: int = 0
    device: str = "cpu"

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

    def __json__(self) -> dict[str, object]:
        """``labs list --json``: what a lab declares (its ``run`` is code, not data)."""
        return {"id": self.id, "title": self.title, "claims": self.claims, "seed": self.seed_figures}

    def seed_figure(self, key: str) -> SeedFigure:
        for fig in self.seed_figures:
            if fig.key == key:
                return fig
        raise KeyError(f"lab {self.id} declares no seed figure {key!r}")


def format_measured(value: Value, unit: str = "") -> str:
    """``10.96 points``: a value as the rule text shows it."""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif value is None:
        text = "n/a"
    else:
        text = _fmt(value)
    return f"{text} {unit}".strip()


def judged(
    key: str,
    label: str,
    value: Value,
    unit: str,
    *,
    rule: Rule,
    seed: SeedFigure | None = None,
    cause: Cause | None = None,
    detail: str = "",
) -> Measurement:
    """A measurement with its verdict from ``rule`` (and ``cause``, when one was measured).

    Example::

        judged("half_width", "Wald half-width", 10.96, "points",
               rule=Within(10.9, rel=0.1, source="our choice: the seed rounds to 3 digits"), seed=fig)
    """
    return Measurement(
        key=key,
        label=label,
        value=value,
        unit=unit,
        seed=seed,
        detail=detail,
        rule=rule,
        verdict=rule.judge(value, cause=cause),
    )


def claims_of(labs: Sequence[Lab]) -> list[str]:
    return sorted({c for lab in labs for c in lab.claims})
