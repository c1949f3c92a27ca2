"""Lab C2.4: numpy attention vs SDPA at floating-point precision."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c2_4_errors_are_at_dtype_precision(tmp_path):
    (lab,) = select_labs(["C2.4"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert 1e-8 < m["max_err_float32"].value < 1e-6  # seed: 2.65e-7
    assert m["max_err_float64"].value < 1e-13
    assert m["max_err_float32"].seed is not None and m["max_err_float32"].seed.value == 2.65e-7
    assert str(m["max_err_float64"].verdict) == "reproduced"
    assert m["naive_softmax_nan"].value > 0 and "ok=False" in m["naive_softmax_nan"].detail
