from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c4_5_autocast_keeps_fp32(tmp_path):
    res = run_lab(select_labs(["C4.5"])[0], out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["param_dtypes"].value == "float32" and m["param_dtypes"].verdict.kind == "reproduced"
    assert 0.45 < m["act_ratio"].value < 0.8
