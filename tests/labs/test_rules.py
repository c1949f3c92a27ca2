"""The verdict rules: each holds on one side and flips on the other (issue 12's "every verdict can flip")."""

import math

import pytest

from expkit.labs.base import AtLeast, AtMost, Cause, InBand, KOfN, Needs, SameSign, Shown, Within, judged
from expkit.render.jsonout import to_jsonable


@pytest.mark.parametrize(
    ("rule", "holding", "contrary"),
    [
        (Within(10.9, rel=0.1), 10.96, 12.5),  # seed C2.2: 10.9 points
        (Within(0.14, abs=0.05), 0.13, 0.32),
        (AtMost(16.0), 14.3, 18.25),
        (AtLeast(1.7), 1.9, 1.2),
        (InBand(0.45, 0.8, source="our band"), 0.6, 0.9),
        (SameSign(-1.0), -0.2, 0.3),
        (KOfN(8, 9), 9, 7),
    ],
)
def test_rule_holds_then_flips(rule, holding, contrary):
    assert rule.judge(holding).kind == "reproduced"
    assert rule.judge(contrary).kind == "not reproduced"
    assert rule.judge(math.nan).kind == "not reproduced"


def test_differs_only_with_a_measured_cause():
    rule = AtLeast(6.0)
    cause = Cause("cores", 2, "an 8-process speed-up needs 8 cores")
    v = rule.judge(1.9, cause=cause)
    assert v.kind == "differs" and "cores = 2" in v.reason
    assert rule.judge(7.0, cause=cause).kind == "reproduced"  # a cause does not excuse a rule that holds


def test_shown_is_demonstrated_never_reproduced():
    rule = Shown("the loop reads top to bottom")
    assert rule.judge(True).kind == "demonstrated"
    assert rule.judge(False).kind == "not reproduced"
    with pytest.raises(TypeError):
        rule.judge(1.0)


def test_needs_is_not_measured_here():
    v = Needs("a CUDA GPU").judge(False)
    assert v.kind == "not measured here" and "CUDA" in v.reason


def test_judged_measurement_carries_its_rule_into_json():
    m = judged("hw", "Wald half-width", 10.96, "points", rule=Within(10.9, rel=0.1, source="our tolerance"))
    assert m.verdict.kind == "reproduced"
    assert m.rule_text == "10.96 points: within +-10% of 10.9 (our tolerance)"
    data = to_jsonable(m)
    assert data["rule"] == "within +-10% of 10.9 (our tolerance)"
    assert data["verdict"]["kind"] == "reproduced"


def test_nan_stays_visible_in_json():
    m = judged("x", "x", math.nan, "", rule=AtMost(1.0))
    assert to_jsonable(m)["value"] == "nan"
