"""Lab C2.1: the broadcast trap measured in numpy and torch, caught by expect_shape."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c2_1_broadcast_is_silent_and_caught(tmp_path):
    (lab,) = select_labs(["C2.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["broadcast_shape"].value == "(3, 3)" and str(m["broadcast_shape"].verdict) == "reproduced"
    assert m["expect_shape_caught"].value is True and "(200, 200)" in m["expect_shape_caught"].detail
    # residual sd 0.1 -> MSE ~0.01; the (N, N) broadcast compares every pred with every target: ~2 (var 1 + 1)
    assert 0.005 < m["mse_right"].value < 0.02 and m["mse_broadcast"].value > 50 * m["mse_right"].value
    assert m["softmax_wrong_axis_err"].value > 0.1
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000
