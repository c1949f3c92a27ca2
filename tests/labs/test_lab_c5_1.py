"""Lab C5.1 runs the six stock lines (tokenizer, model, dataset, LoRA config, SFTTrainer, train) offline and
checks each line's mapping to the 20-line loop by what it does."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c5_1_six_lines_checked_by_behaviour(tmp_path):
    (lab,) = select_labs(["C5.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert m["lines_ok"].value == 6 and m["lines_mapped"].verdict.kind == "demonstrated"
    assert_flips(m["lines_mapped"], False)
    detail = m["lines_mapped"].detail
    assert "ignore_index=-100" in detail and "optimizer.step() calls for 10 steps" in detail
    assert "base weights unchanged (True)" in detail and "all lora_*" in detail
    assert m["loss_last"].value < m["loss_first"].value
    assert 0 < m["trainable_fraction"].value < 100
    # assistant_only_loss: a short answer and its <|im_end|> out of tens of tokens
    assert 2 <= m["trained_tokens_first"].value <= 8
    assert "SFTTrainer" in res.explanation
