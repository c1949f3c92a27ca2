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


def assert_flips(m: Measurement, contrary: Value) -> None:
    """Fed the measurement that would contradict the claim, the rule gives another verdict."""
    assert m.rule is not None and m.verdict is not None
    flipped = m.rule.judge(contrary)
    assert flipped.kind != m.verdict.kind, f"{m.key}: {contrary!r} under '{m.rule}' still gives {flipped.kind}"
