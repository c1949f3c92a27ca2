"""The checks every lab test applies to its result (issue 12): each judged figure carries a rule, the verdict
shown is what that rule gives for the measured value, and the contrary measurement flips it.

One helper for every lab (issue 20 item 5 merged ``lab_verdict_checks.py`` into this module):
``assert_verdicts_follow(res)`` checks a whole result at once; ``judged_measurements`` and
``assert_verdict_follows`` check measurement by measurement where a test judges only some of them.
"""

from __future__ import annotations

from expkit.labs.base import LabResult, Measurement, Value

# the verdicts under which the claim holds; a flip crosses between these and the rest
_HOLDS = ("reproduced", "demonstrated")


def judged_measurements(res: LabResult) -> dict[str, Measurement]:
    """The measurements with a verdict, by key. Each must carry a non-empty rule, a measurement without a
    verdict must carry none, and the lab must have judged something."""
    for m in res.measurements:
        if m.verdict is None:
            assert m.rule is None, f"{res.id} {m.key}: a rule without a verdict"
        else:
            assert m.rule is not None and str(m.rule).strip(), f"{res.id} {m.key}: {m.verdict.kind} without a rule"
    judged = {m.key: m for m in res.measurements if m.verdict is not None}
    assert judged, f"lab {res.id} judged nothing"
    return judged


def assert_verdict_follows(m: Measurement) -> None:
    """The verdict is the rule applied to the measured value. ``differs`` is the rule failing with a measured
    cause: the rule alone gives ``not reproduced``, and the verdict names the cause."""
    assert m.rule is not None and m.verdict is not None, f"{m.key}: not judged"
    again = m.rule.judge(m.value)
    if m.verdict.kind == "differs":
        assert again.kind == "not reproduced", f"{m.key}: 'differs' needs a failed rule, '{m.rule}' gives {again}"
        assert m.verdict.reason, f"{m.key}: 'differs' without its measured cause"
    else:
        assert again.kind == m.verdict.kind, (
            f"{m.key}: {m.value!r} under '{m.rule}' gives {again.kind}, the lab said {m.verdict}"
        )


def assert_verdicts_follow(res: LabResult) -> dict[str, Measurement]:
    """The lab ran, and every judged measurement's verdict follows from its rule. Returns every measurement
    (judged or not) by key."""
    assert res.status == "ok", res.error
    for m in judged_measurements(res).values():
        assert_verdict_follows(m)
    return {m.key: m for m in res.measurements}


def assert_flips(m: Measurement, contrary: Value) -> None:
    """Fed the measurement that would contradict the claim, the rule crosses over: a verdict that holds becomes
    one that does not, and the reverse (``differs`` -> ``not reproduced`` is no flip: both say the rule failed).
    Judged from the rule alone, so it also takes a rule under test before any lab ran it."""
    assert m.rule is not None, f"{m.key}: no rule"
    before = m.rule.judge(m.value)
    assert before.kind != "not measured here", f"{m.key}: nothing was measured, so nothing can flip"
    flipped = m.rule.judge(contrary)
    assert (flipped.kind in _HOLDS) != (before.kind in _HOLDS), (
        f"{m.key}: {m.value!r} gives {before.kind} and {contrary!r} gives {flipped.kind} under '{m.rule}'"
    )


def assert_computed(measurements: dict[str, Measurement], *keys: str, provenance: str = "computed") -> None:
    """Each figure of ``keys`` is labelled ``provenance`` (issue 36): a formula, the memory ledger, the roofline model
    or a meta-device count was run on nothing, so the report must not show it as "measured here"."""
    wrong = {k: measurements[k].provenance for k in keys if measurements[k].provenance != provenance}
    assert not wrong, f"figures not labelled {provenance}: {wrong}"
