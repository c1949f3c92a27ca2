from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c4_5_autocast_keeps_fp32_and_halves_matmul_outputs(tmp_path):
    res = run_lab(select_labs(["C4.5"])[0], out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert m["param_dtypes"].value is True and m["param_dtypes"].verdict.kind == "demonstrated"
    assert "parameters: float32" in m["param_dtypes"].detail and "linear outputs: bfloat16" in m["param_dtypes"].detail
    # "halves" is judged on the matmul outputs themselves (bf16 2 B vs fp32 4 B), not all saved tensors
    assert abs(m["matmul_ratio"].value - 0.5) < 1e-6 and m["matmul_ratio"].verdict.kind == "reproduced"
    assert_flips(m["matmul_ratio"], m["act_ratio"].value)  # the saved-tensor ratio (~0.73) is not "halves"
    assert_flips(m["param_dtypes"], False)
    assert 0.45 < m["act_ratio"].value < 0.8 and m["act_ratio"].verdict is None
