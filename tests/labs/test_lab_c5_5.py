"""Lab C5.5: the masked fraction judged on the data set (not the first conversation), measured by the audit."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c5_5_masked_fraction_judged_on_the_data_set(tmp_path):
    (lab,) = select_labs(["C5.5"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    one, all_, no_sys = m["masked_one"].value, m["masked_all"].value, m["masked_no_system"].value
    assert 50 < one < 100 and 50 < all_ < 100
    assert no_sys < all_  # dropping the system prompt leaves a larger share trained
    assert m["masked_one"].verdict is None  # one example is shown, not judged
    assert m["masked_all"].seed.value == 85.0
    # the verdict follows from the data set's fraction: within 5 points of 85%, else differs with the answer length
    assert m["masked_all"].verdict.kind == ("reproduced" if abs(all_ - 85.0) <= 5.0 else "differs")
    assert_flips(m["masked_all"], 70.0)
    assert m["mostly_masked"].value == 500 and m["mostly_masked"].verdict.kind == "reproduced"
    assert_flips(m["mostly_masked"], 499)
    v = m["masked_all"].rule.judge(95.0, cause=None)  # a data set of one-token answers: no cause, not reproduced
    assert v.kind == "not reproduced"
