from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def _lab(lab_id):
    return next(l for l in select_labs([lab_id]) if l.id == lab_id)


def test_lab_c4_2_activations(tmp_path):
    res = run_lab(_lab("C4.2"), out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert 20 < m["act_7b"].value < 40  # HF blocks: 1.3-1.9x the 17.0 GiB formula
    assert abs(m["korthikanti_7b"].value - 17.0) < 0.01
    assert m["ckpt_bytes"].value < m["act_7b"].value / 5
    assert 1.5 < m["act_qwen"].value < 20 and m["ckpt_time"].value > 0.8
    assert res.figures


def test_lab_c4_2_validation(tmp_path):
    res = run_lab(_lab("C4.2v"), out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["max_error"].verdict.kind == "reproduced" and m["max_error"].value < 10
