from verdict_checks import assert_computed, assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c4_4_gpus_needed(tmp_path):
    res = run_lab(select_labs(["C4.4"])[0], out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert m["decision"].value is True and m["decision"].verdict.kind == "demonstrated"
    assert "full needs 8, LoRA 1" in m["decision"].detail or "LoRA 1 GPUs" in m["decision"].detail
    assert_flips(m["decision"], False)  # a LoRA count equal to the full one would not decide anything
    assert m["qwen2.5-0.5b_full"].value.startswith("24 GB: 1")
    # issue 36: every count of the table is a ledger prediction, like the judged row
    assert_computed(m, *(k for k in m if k != "decision"))
