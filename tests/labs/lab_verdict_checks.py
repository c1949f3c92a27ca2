"""Checks every lab test of chapters 1-3 applies to its result (issue 12): each judged figure carries a
rule, the verdict is what that rule gives for the measured value, and the contrary value flips it."""

from __future__ import annotations

from expkit.labs.base import LabResult, Measurement, Value


def judged_measurements(res: LabResult) -> dict[str, Measurement]:
    """The measurements with a verdict, by key; each must carry a non-empty rule."""
    out = {m.key: m for m in res.measurements if m.verdict is not None}
    assert out, f"lab {res.id} judged nothing"
    for m in out.values():
        assert m.rule is not None and str(m.rule), f"{res.id} {m.key}: a verdict without a rule"
    return out


def assert_verdict_follows(m: Measurement) -> None:
    """The verdict is the rule applied to the measured value (``differs`` is the rule failing with a
    measured cause, so without the cause it reads ``not reproduced``)."""
    assert m.rule is not None and m.verdict is not None
    again = m.rule.judge(m.value)
    expected = "not reproduced" if m.verdict.kind == "differs" else m.verdict.kind
    assert again.kind == expected, f"{m.key}: {m.value!r} under '{m.rule}' gives {again.kind}, lab said {m.verdict}"


_HOLDS = ("reproduced", "demonstrated")


def assert_flips(m: Measurement, contrary: Value) -> None:
    """Fed the measurement that would contradict the claim, the rule crosses over: a verdict that holds becomes
    one that does not, and the reverse (``differs`` -> ``not reproduced`` is no flip: both say the rule failed)."""
    assert m.rule is not None and m.verdict is not None
    assert m.verdict.kind != "not measured here", f"{m.key}: nothing was measured, so nothing can flip"
    flipped = m.rule.judge(contrary)
    assert (flipped.kind in _HOLDS) != (m.verdict.kind in _HOLDS), (
        f"{m.key}: {contrary!r} under '{m.rule}' gives {flipped.kind}, the lab said {m.verdict.kind}"
    )
