from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c5_2_param_accounting(tmp_path):
    res = run_lab(select_labs(["C5.2"])[0], out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["total_params"].value == 494_032_768 and m["trainable"].value == 8_798_208
    assert m["untied"].value == 494_032_768 + 151_936 * 896  # the lost tie counts the head again
    assert all(m[k].verdict.kind == "reproduced" for k in ("arch", "total_params", "trainable", "fraction", "state"))
