"""The stop-token contract on a GenerationConfig."""

from __future__ import annotations

from transformers import GenerationConfig

from expkit.finetune.contract import enforce_stop_contract, read_stop_contract
from expkit.finetune.labels import EndOfTurn

EOT = EndOfTurn("<|im_end|>", 2)


def test_fix_puts_the_end_of_turn_first_and_keeps_the_old_ids(tmp_path):
    cfg = GenerationConfig(eos_token_id=0)
    c = enforce_stop_contract(cfg, end_of_turn=EOT)
    assert (c.eos_ids_before, c.eos_ids_after, c.fixed, c.ok) == ((0,), (2, 0), True, True)
    assert cfg.eos_token_id == [2, 0]
    cfg.save_pretrained(tmp_path)
    assert read_stop_contract(tmp_path, end_of_turn=EOT).ok


def test_no_fix_reports_the_broken_contract(tmp_path):
    cfg = GenerationConfig(eos_token_id=[0, 5])
    c = enforce_stop_contract(cfg, end_of_turn=EOT, fix=False)
    assert not c.ok and not c.fixed and cfg.eos_token_id == [0, 5]
    assert not read_stop_contract(tmp_path, end_of_turn=EOT).ok  # no generation_config.json at all
