from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.lab_c4_6_oom import seed_rule_block
from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_seed_rule_block_reads_phase_and_lora_rerun():
    assert seed_rule_block("loading", still_oom_with_lora=None) == {"weights"}
    assert seed_rule_block("backward", still_oom_with_lora=None) == {"gradients", "optimizer state"}
    assert seed_rule_block("forward", still_oom_with_lora=True) == {"activations"}
    assert seed_rule_block("forward", still_oom_with_lora=False) == {"gradients", "optimizer state"}


def test_lab_c4_6_capacity_sweep_attributed_two_ways(tmp_path):
    res = run_lab(select_labs(["C4.6"])[0], out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    n = m["ooms"].value
    # an even grid of capacities reaches every phase, a backward OOM included (issue 12)
    assert m["loading_ooms"].value >= 1 and m["backward_ooms"].value >= 1 and m["forward_ooms"].value >= 1
    assert m["optimizer_step_ooms"].value >= 1 and n >= 6
    assert "OOM in backward" in m["attribution"].detail and "ledger: gradients" in m["attribution"].detail
    assert m["attribution"].value >= n - 1
    assert_flips(m["attribution"], n if m["attribution"].value < n else n - 2)
