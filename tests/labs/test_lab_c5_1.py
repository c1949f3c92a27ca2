"""Lab C5.1 runs the six stock lines (tokenizer, model, dataset, LoRA config, SFTTrainer, train) offline."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c5_1_six_lines_run_and_train(tmp_path):
    (lab,) = select_labs(["C5.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["six_lines_run"].value is True and str(m["six_lines_run"].verdict) == "reproduced"
    assert m["loss_last"].value < m["loss_first"].value
    assert 0 < m["trainable_fraction"].value < 100
    # assistant_only_loss: a short answer and its <|im_end|> out of tens of tokens
    assert 2 <= m["trained_tokens_first"].value <= 8
    assert "SFTTrainer" in res.explanation and "peft" in m["six_lines_run"].detail
