"""Lab C1.4: a real nested nn.Module error; the seed's reading rule (by hand and in expkit why) finds the
user's line with the bug."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_4_finds_the_user_frame(tmp_path):
    (lab,) = select_labs(["C1.4"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["user_frame"].value is True
    assert "expkit why chose my_model.py:20 in forward" in m["user_frame"].detail
    assert "by hand: line 20" in m["user_frame"].detail
    assert m["call_impl_frames"].value >= 6  # three nested module calls, two plumbing frames each
    assert m["lines_shown"].value < m["frames_total"].value
    assert m["explanation"].value.startswith("shape_mismatch") and "self.proj" in m["explanation"].detail
    judged = judged_measurements(res)
    assert set(judged) == {"user_frame"} and judged["user_frame"].verdict.kind == "demonstrated"
    assert_verdict_follows(judged["user_frame"])
    assert_flips(judged["user_frame"], False)
