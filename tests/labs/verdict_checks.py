"""Checks every lab test applies to its result (issue 12): each verdict has a rule, and follows from it."""

from __future__ import annotations

from expkit.labs.base import LabResult, Measurement


def assert_verdicts_follow(res: LabResult) -> dict[str, Measurement]:
    """Every judged measurement carries a non-empty rule, and the rule applied to the measured value gives
    the verdict shown (``differs`` is the rule failing with a measured cause). Returns the measurements by key."""
    assert res.status == "ok", res.error
    judged_any = False
    for m in res.measurements:
        if m.verdict is None:
            assert m.rule is None, f"{m.key}: a rule without a verdict"
            continue
        judged_any = True
        assert m.rule is not None and str(m.rule).strip(), f"{m.key}: verdict {m.verdict.kind} without a rule"
        again = m.rule.judge(m.value)
        if m.verdict.kind == "differs":
            assert again.kind == "not reproduced" and m.verdict.reason, f"{m.key}: 'differs' needs a failed rule"
        else:
            assert again.kind == m.verdict.kind, f"{m.key}: rule gives {again.kind}, shown {m.verdict.kind}"
    assert judged_any, "the lab judged nothing"
    return {m.key: m for m in res.measurements}


def assert_flips(m: Measurement, contrary: object) -> None:
    """Feeding the rule the contrary measurement changes the verdict."""
    assert m.rule is not None
    before, after = m.rule.judge(m.value).kind, m.rule.judge(contrary).kind
    assert before != after, f"{m.key}: {m.value!r} and {contrary!r} both give {before}"
