"""The verdict rules: each holds on one side and flips on the other (issue 12's "every verdict can flip")."""

import math

import pytest

from expkit.labs.base import (
    AtLeast,
    AtMost,
    Cause,
    InBand,
    KOfN,
    Needs,
    Predicted,
    SameSign,
    Shown,
    Within,
    judged,
    not_measured,
)
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
    cause = Cause("cores", 2, "an 8-process speed-up needs 8 cores", measured_by="os.cpu_count()")
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


def test_a_computed_figure_is_never_called_measured():
    rule = AtMost(16.0)
    v = rule.judge(18.25, provenance="computed")
    assert v.kind == "not reproduced" and "computed (predicted, not run) 18.25" in v.reason
    assert "measured" not in v.reason
    assert "measured 18.25" in rule.judge(18.25).reason
    held = not_measured(judged("p", "peak", 14.88, "GB", rule=rule))
    assert held.verdict.kind == "reproduced" and "computed" in held.verdict.reason
    assert held.provenance == "computed" and "(computed)" in held.rule_text
    assert to_jsonable(held)["provenance"] == "computed"
    with pytest.raises(ValueError, match="provenance"):
        not_measured(held, "guessed")
    cause = Cause("cores", 2, "needs 8 cores", measured_by="os.cpu_count()")
    with pytest.raises(ValueError, match="cannot 'differ'"):
        not_measured(judged("p", "peak", 18.25, "GB", rule=rule, cause=cause))


def test_predicted_needs_hardware_and_keeps_the_prediction_and_its_assumptions():
    rule = Predicted(AtMost(16.0), needs="8 GPUs of 16 GB", assumptions="foreach AdamW 18.25 GB; fused 14.88 GB")
    v = rule.judge(18.25)
    assert v.kind == "not measured here"
    assert "misses" in v.reason and "fused 14.88" in v.reason and "8 GPUs" in v.reason
    assert "meets" in rule.judge(14.88).reason
    # the prediction itself flips with the deciding assumption
    assert not rule.prediction_holds(18.25) and rule.prediction_holds(14.88)


@pytest.mark.parametrize(
    ("figure", "restated"),
    [
        (87.3, 100 - 87.3),  # C5.5 before: the "cause" was 1 - masked fraction
        (0.873, 1 - 0.873),
        (87.3, 0.873),
        (2.5, 2.5),
        (4.0, 0.25),
        (True, False),  # C6.5 before: a yes/no beside the yes/no figure it restates
    ],
)
def test_a_cause_that_restates_the_figure_is_rejected(figure, restated):
    cause = Cause("restated", restated, "says the figure again", measured_by="the figure")
    with pytest.raises(ValueError, match="restate"):
        judged("x", "x", figure, "", rule=AtLeast(1000.0), cause=cause)


def test_a_cause_says_how_it_was_measured():
    with pytest.raises(ValueError, match="measured_by"):
        Cause("cores", 2, "an 8-process speed-up needs 8 cores")
    independent = Cause("cores", 2, "an 8-process speed-up needs 8 cores", measured_by="os.cpu_count()")
    assert judged("s", "speed-up", 1.9, "x", rule=AtLeast(6.0), cause=independent).verdict.kind == "differs"
