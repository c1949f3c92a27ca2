from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c4_1_sixteen_bytes(tmp_path):
    res = run_lab(select_labs(["C4.1"])[0], out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert 16.0 <= m["bytes_per_param"].value < 16.1  # + AdamW's step counters
    assert m["bytes_per_param"].verdict.kind == "reproduced"
    assert_flips(m["bytes_per_param"], 18.0)  # the HF docs' 18 (a 16-bit copy kept) would not be the seed's 16
    assert m["ledger_zero"].value == 16 and m["ledger_hf"].value == 18
    assert 1.0 < m["autocast_copies"].value < 2.0
