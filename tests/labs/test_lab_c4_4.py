from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c4_4_gpus_needed(tmp_path):
    res = run_lab(select_labs(["C4.4"])[0], out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["decision"].verdict.kind == "reproduced"
    full, lora = (int(v) for v in m["decision"].value.split(" / "))
    assert full > lora == 1
    assert m["qwen2.5-0.5b_full"].value.startswith("24 GB: 1")
