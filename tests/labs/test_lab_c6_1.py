"""Lab C6.1 runs in the quick budget and measures the ridge, decode intensity and decode across batch sizes."""

from __future__ import annotations

import pytest

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_1_quick(tmp_path):
    (lab,) = select_labs(["C6.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["ridge_h100"].value == pytest.approx(295, abs=1) and m["ridge_h100"].verdict.kind == "reproduced"
    assert m["decode_intensity_b1"].value == pytest.approx(1.0, abs=0.01)
    assert m["decode_intensity_b64"].value > 50
    assert m["cpu_peak"].value > 0 and m["cpu_bandwidth"].value > 0
    assert m["cpu_ridge"].value == pytest.approx(m["cpu_peak"].value / m["cpu_bandwidth"].value)
    assert m["decode_tps_b1"].value > 0 and m["decode_speedup_b64"].value > 0
    # the verdict follows from the measurement: a faster batch 64 whose batch-1 point sits left of this CPU's ridge
    b1_intensity = float(m["decode_tps_b1"].detail.split("intensity ")[1].split(" ")[0])
    faster = m["decode_speedup_b64"].value > 1 and b1_intensity < m["cpu_ridge"].value
    assert m["decode_speedup_b64"].verdict.kind == ("reproduced" if faster else "not reproduced")
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000
