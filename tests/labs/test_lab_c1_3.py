"""Lab C1.3: our lambda error, multiprocessing's own error, and copied globals."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_3_pool_rules(tmp_path):
    (lab,) = select_labs(["C1.3"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["top_level_rule"].value == "rejected" and "module top level" in m["top_level_rule"].detail
    assert "pickle" in m["raw_error"].value.lower()
    assert m["globals_copied"].value == 0 and str(m["globals_copied"].verdict) == "reproduced"
    assert m["reject_us"].value < 50_000
