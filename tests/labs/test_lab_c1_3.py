"""Lab C1.3: the seed's pool rules measured on multiprocessing.Pool itself; expkit's guard is a side figure."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_3_pool_rules(tmp_path):
    (lab,) = select_labs(["C1.3"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    # what multiprocessing itself said: the top-level function ran, the lambda failed to pickle
    assert "[2, 3, 4]" in m["top_level_rule"].detail and "pickl" in m["top_level_rule"].detail.lower()
    assert "parent's SEEN after: 0" in m["globals_copied"].detail
    assert m["expkit_guard"].value == "rejected" and "module top level" in m["expkit_guard"].detail
    assert m["reject_us"].value < 50_000
    judged = judged_measurements(res)
    assert set(judged) == {"top_level_rule", "globals_copied"}
    for key in judged:
        assert judged[key].verdict.kind == "demonstrated"  # behaviour: never "reproduced"
        assert_verdict_follows(judged[key])
        assert_flips(judged[key], False)
