"""Lab C2.1: the broadcast trap measured in numpy and torch, caught by expect_shape."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c2_1_broadcast_is_silent_and_caught(tmp_path):
    (lab,) = select_labs(["C2.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["broadcast_shape"].value is True and m["broadcast_shape"].detail == "numpy (3, 3), torch (3, 3)"
    assert m["expect_shape_caught"].value is True and "(200, 200)" in m["expect_shape_caught"].detail
    # residual sd 0.1 -> MSE ~0.01; the (N, N) broadcast compares every pred with every target: ~2 (var 1 + 1)
    assert 0.005 < m["mse_right"].value < 0.02 and m["mse_broadcast"].value > 50 * m["mse_right"].value
    assert m["softmax_wrong_axis_err"].value > 0.1
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000
    judged = judged_measurements(res)
    assert set(judged) == {"broadcast_shape", "expect_shape_caught"}
    for key in judged:
        assert judged[key].verdict.kind == "demonstrated"
        assert_verdict_follows(judged[key])
        assert_flips(judged[key], False)
