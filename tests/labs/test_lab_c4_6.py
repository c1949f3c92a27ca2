from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c4_6_three_ooms_attributed(tmp_path):
    res = run_lab(select_labs(["C4.6"])[0], out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert [m[k].value for k in ("weights", "optimizer state", "activations")] == \
        ["weights", "optimizer state", "activations"]
    assert all(x.verdict.kind == "reproduced" for x in res.measurements)
    assert "phase from the traceback: loading" in m["weights"].detail
    assert "phase from the traceback: optimizer step" in m["optimizer state"].detail
    assert "gradient checkpointing" in m["activations"].detail
