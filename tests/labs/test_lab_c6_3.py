"""Lab C6.3 runs quick: the memory ledger's lines fall into the four blocks (temporaries by phase), and the four
blocks match a measured step of small models."""

from __future__ import annotations

from verdict_checks import assert_computed, assert_flips, assert_verdicts_follow

from expkit.labs.lab_c6_3_memory_blocks import SETUPS, SHARE_RULE, block_of, four_block_share, ledger_blocks
from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_block_names():
    assert [
        block_of(n)
        for n in (
            "fp32 master weights",
            "frozen base weights",
            "gradients",
            "Adam m",
            "activations",
            "logits / loss",
            "temporaries",
            "runtime overhead",
        )
    ] == ["weights", "weights", "gradients", "optimizer state", "activations", "activations", "activations", "other"]


def test_temporaries_go_to_the_block_of_their_phase():
    # issue 12: 7B full peaks at the optimizer step, where the temporaries are AdamW's sqrt(v), not activations
    assert block_of("temporaries", "optimizer step (all gradients + step temporaries)") == "optimizer state"
    assert block_of("temporaries", "backward, at the loss (all activations + logits grads)") == "activations"


def test_lab_c6_3_quick(tmp_path):
    (lab,) = select_labs(["C6.3"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert 90 < m["four_block_share"].value < 100  # the rest: CUDA context and allocator slack
    assert_flips(m["four_block_share"], 80.0)
    assert m["blocks_measured"].value == 8 and m["blocks_measured"].verdict.kind == "reproduced"
    assert_flips(m["blocks_measured"], 7)
    assert "state-bound) optimizer state: measured" in m["blocks_measured"].detail
    assert "optimizer state" in m["blocks_0.5B_full"].value
    assert_computed(m, *(k for k in m if k.startswith("blocks_") and k != "blocks_measured"))  # the ledger's
    assert (tmp_path / res.figures[0]).is_file()


def test_c6_3_share_flips_at_short_sequences():
    """The judged share is computed from the ledger: the runtime overhead is a constant, so at seq 256 (small
    activations) the 0.5B LoRA set-up has well over 10% of its ledger outside the four blocks and the claim fails;
    at the lab's seq 2048 it holds (issue 22: 'flips below seq 2048')."""
    quick = SETUPS[:1] + SETUPS[2:3]
    at_2048, at_256 = four_block_share(ledger_blocks(quick, seq=2048)), four_block_share(ledger_blocks(quick, seq=256))
    assert at_256 < at_2048
    assert SHARE_RULE.judge(at_2048, provenance="computed").kind == "reproduced"
    assert SHARE_RULE.judge(at_256, provenance="computed").kind == "not reproduced"


def test_c6_3_no_measured_case_is_no_verdict(tmp_path, monkeypatch):
    """issue 36: the measured cases are found by name in the ledger's validation set; renamed, none is measured and
    'every block within 10%' held on 0 of 0. Now it is not reproduced."""
    import expkit.memory.validation as validation

    monkeypatch.setattr(validation, "VALIDATION_CASES", ())
    (lab,) = select_labs(["C6.3"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    blocks = {m.key: m for m in res.measurements}["blocks_measured"]
    assert blocks.value is None and blocks.verdict.kind == "not reproduced"
