"""Lab C1.4: a real nested nn.Module error; expkit why finds the user's line."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_4_finds_the_user_frame(tmp_path):
    (lab,) = select_labs(["C1.4"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["user_frame"].value == "my_model.py:20 in forward" and str(m["user_frame"].verdict) == "reproduced"
    assert m["call_impl_frames"].value >= 6  # three nested module calls, two plumbing frames each
    assert m["lines_shown"].value < m["frames_total"].value
    assert m["explanation"].value.startswith("shape_mismatch") and "self.proj" in m["explanation"].detail
