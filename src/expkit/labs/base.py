"""What a lab is: the seed's figures for a claim, a ``run`` that measures them, and the result.

A lab never copies a seed figure into its result. It measures with library code; the seed figure is
carried beside the measurement only so the report can show both and a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

__all__ = [
    "PROVENANCES",
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
    "Predicted",
    "Provenance",
    "Rule",
    "RuleChange",
    "SameSign",
    "SeedFigure",
    "Shown",
    "Verdict",
    "Within",
    "check_cause_independent",
    "format_measured",
    "judged",
    "not_measured",
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

# Where a figure comes from: ``measured`` (run on this machine), ``computed`` (a formula, the memory ledger, the
# roofline model, a meta-device count or a simulation from assumed inputs: nothing of this machine or the world
# measured), ``datasheet`` (a vendor's number). The verdict text and the report's counts keep them apart; the report
# marks every unjudged figure that is not measured too.
Provenance = Literal["measured", "computed", "datasheet"]
PROVENANCES: tuple[Provenance, ...] = ("measured", "computed", "datasheet")
_VALUE_WORD = {"measured": "measured", "computed": "computed (predicted, not run)", "datasheet": "datasheet"}


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

    A cause is a second quantity measured independently of the judged figure (``value`` read off this machine or
    a separate probe of this run), never a platform guess and never the figure restated (``1 - fraction``).
    ``judged`` rejects a numeric cause that is the figure or a plain rescaling of it
    (:func:`check_cause_independent`); ``measured_by`` names the probe that gave it, and must be given.
    """

    label: str
    value: Value
    explains: str
    unit: str = ""
    measured_by: str = ""

    def __post_init__(self) -> None:
        if not self.measured_by.strip():
            raise ValueError(f"cause {self.label!r}: say how it was measured apart from the figure (measured_by)")

    def __str__(self) -> str:
        figure = f"{_fmt(self.value)} {self.unit}".strip()
        return f"{self.label} = {figure}: {self.explains}"


def _fmt(value: Value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# the ways a figure gets restated as its own "cause": itself, its complement (as a fraction or in %), a rescaling
# by 100 (fraction <-> %), its reciprocal
_RESTATEMENTS: tuple[tuple[str, Callable[[float], float]], ...] = (
    ("the figure itself", lambda x: x),
    ("1 - figure", lambda x: 1 - x),
    ("100 - figure", lambda x: 100 - x),
    ("1 - figure / 100", lambda x: 1 - x / 100),
    ("100 * (1 - figure)", lambda x: 100 * (1 - x)),
    ("figure / 100", lambda x: x / 100),
    ("100 * figure", lambda x: 100 * x),
    ("1 / figure", lambda x: 1 / x if x else math.inf),
)


def check_cause_independent(value: Value, cause: Cause) -> None:
    """Raise ValueError when ``cause`` restates the judged ``value``: a numeric cause equal (to 1e-9 relative) to
    the figure, its complement, a rescaling by 100 or its reciprocal; a boolean cause equal to a boolean figure
    or to its negation (it can only repeat whether the rule held)."""
    if isinstance(value, bool) or isinstance(cause.value, bool):
        if isinstance(value, bool) and isinstance(cause.value, bool):
            raise ValueError(f"cause {cause.label!r} is a yes/no beside a yes/no figure: it restates the figure")
        return
    if not isinstance(value, (int, float)) or not isinstance(cause.value, (int, float)):
        return
    x, c = float(value), float(cause.value)
    if not (math.isfinite(x) and math.isfinite(c)):
        return
    for name, restate in _RESTATEMENTS:
        r = restate(x)
        if math.isfinite(r) and math.isclose(c, r, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(
                f"cause {cause.label!r} = {_fmt(c)} is {name} ({_fmt(x)}): a cause must be measured "
                "independently of the figure, not restate it"
            )


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

    def judge(self, value: Value, *, cause: Cause | None = None, provenance: Provenance = "measured") -> Verdict:
        """``reproduced`` when the rule holds; else ``differs`` with a measured ``cause``, else
        ``not reproduced``. A value that is missing or NaN never holds. The reason names the value's
        ``provenance``: a computed figure is "computed (predicted, not run)", never "measured"."""
        word = _VALUE_WORD[provenance]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return Verdict("not reproduced", f"no finite {provenance} value ({value}); rule: {self}")
        if self.holds(value):
            return Verdict("reproduced", None if provenance == "measured" else f"{word} {_fmt(value)}")
        if cause is not None:
            return Verdict("differs", str(cause) if provenance == "measured" else f"{word} {_fmt(value)}; {cause}")
        return Verdict("not reproduced", f"{word} {_fmt(value)}, rule: {self}")


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

    def judge(self, value: Value, *, cause: Cause | None = None, provenance: Provenance = "measured") -> Verdict:
        verdict = super().judge(value, cause=cause, provenance=provenance)
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

    def judge(self, value: Value, *, cause: Cause | None = None, provenance: Provenance = "measured") -> Verdict:
        return Verdict("not measured here", f"needs {self.needs}; this machine has {_fmt(value)}")


@dataclass(frozen=True)
class Predicted(Rule):
    """A computed figure whose claim needs hardware this machine lacks: the verdict is ``not measured here``,
    with the prediction, what the inner ``rule`` would say of it, and the assumptions that decide it.

    ``assumptions`` names what moves the prediction across the rule (``foreach AdamW: 18.25 GB; fused: 14.88``);
    ``prediction_holds`` is the inner rule's answer, which a flip test checks on the alternative input.
    """

    rule: Rule
    needs: str
    assumptions: str

    def holds(self, value: Value) -> bool:
        return False

    def prediction_holds(self, value: Value) -> bool:
        return self.rule.holds(value)

    def text(self) -> str:
        return f"needs {self.needs} to measure; the prediction is compared with: {self.rule}"

    def judge(self, value: Value, *, cause: Cause | None = None, provenance: Provenance = "computed") -> Verdict:
        met = "meets" if self.rule.holds(value) else "misses"
        return Verdict(
            "not measured here",
            f"needs {self.needs}; {_VALUE_WORD[provenance]} {_fmt(value)} {met} '{self.rule}'; "
            f"deciding assumptions: {self.assumptions}",
        )


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
    provenance: Provenance = "measured"

    @property
    def rule_text(self) -> str | None:
        """``10.96 within +-10% of 10.9``: the measured value and the rule it was judged by."""
        if self.rule is None:
            return None
        value = format_measured(self.value, self.unit)
        if self.provenance != "measured":
            value = f"{value} ({self.provenance})"
        return f"{value}: {self.rule}"


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
class RuleChange:
    """One change to a lab's rule after the lab first ran (issue 36), shown in the report with the verdicts.

    ``key`` is the judged figure; ``date`` and ``commit`` say when; ``first`` and ``changed`` are the rule as first
    stated and after the change; ``why`` is the reason given then. ``seed_text`` quotes the seed's own words that
    argue for the change; a change without it does not judge: the lab judges by the rule as first stated and shows
    the changed one beside it (``judged_by``)."""

    key: str
    date: str
    commit: str
    first: str
    changed: str
    why: str
    seed_text: str = ""

    @property
    def judged_by(self) -> str:
        """Which rule the verdict uses: the changed one only when the seed's text argues for it."""
        if self.seed_text:
            return f"the changed rule, argued from the seed's text: {self.seed_text}"
        return "the rule as first stated (the change is not argued from the seed's text; shown beside it)"


@dataclass(frozen=True)
class LabResult:
    """A lab as it ran: ``status`` is ``ok``, ``failed`` (then ``error`` holds the traceback) or ``needs`` (an
    optional extra is not installed: ``explanation`` names it; no measurement, no verdict)."""

    id: str
    title: str
    claims: tuple[str, ...]
    status: Literal["ok", "failed", "needs"]
    budget: Literal["quick", "full"]
    elapsed_s: float
    measurements: tuple[Measurement, ...] = ()
    explanation: str = ""
    figures: tuple[str, ...] = ()
    error: str | None = None
    seed_figures: tuple[SeedFigure, ...] = ()
    rule_history: tuple[RuleChange, ...] = ()


@dataclass(frozen=True)
class Lab:
    """A registered lab. ``run`` gets a LabContext and returns a LabOutput."""

    id: str
    title: str
    claims: tuple[str, ...]
    seed_figures: tuple[SeedFigure, ...]
    run: Callable[[LabContext], LabOutput] = field(repr=False)
    module: str = ""
    rule_history: tuple[RuleChange, ...] = ()

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

    The value is ``measured`` here; wrap the result in :func:`not_measured` for a computed or datasheet figure.
    A ``cause`` that restates the figure raises ValueError (:func:`check_cause_independent`).

    Example::

        judged("half_width", "Wald half-width", 10.96, "points",
               rule=Within(10.9, rel=0.1, source="our choice: the seed rounds to 3 digits"), seed=fig)
    """
    if cause is not None:
        check_cause_independent(value, cause)
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


def not_measured(m: Measurement, provenance: Provenance = "computed") -> Measurement:
    """``m`` as a ``computed`` (formula, ledger) or ``datasheet`` figure, re-judged so the verdict says so.

    Example::

        not_measured(judged("peak", "predicted peak", 18.25, "GB", rule=AtMost(16.0)))  # "computed ... 18.25"
    """
    if provenance not in PROVENANCES:
        raise ValueError(f"provenance {provenance!r} is not one of {', '.join(PROVENANCES)}")
    if m.verdict is not None and m.verdict.kind == "differs":
        raise ValueError(f"{m.key}: a computed figure cannot 'differ' by a measured cause; judge the measurement")
    verdict = None if m.rule is None else m.rule.judge(m.value, provenance=provenance)
    return replace(m, provenance=provenance, verdict=verdict)


def claims_of(labs: Sequence[Lab]) -> list[str]:
    return sorted({c for lab in labs for c in lab.claims})
