"""Lab C5.6: with <|im_end|> in the loss the model stops; with it masked it does not. The verdict on stopping
is separate from the loss curve and from 'the answer is right'."""

from __future__ import annotations

import pytest
from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


@pytest.mark.slow
def test_c5_6_the_end_of_turn_must_be_in_the_loss(tmp_path):
    (lab,) = select_labs(["C5.6"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert m["stop_with_eos"].value >= 0.8
    assert m["stop_gap"].value == pytest.approx(m["stop_with_eos"].value - m["stop_without_eos"].value)
    assert m["stop_gap"].verdict.kind == "reproduced" and "never closed" in m["stop_gap"].detail
    assert_flips(m["stop_gap"], 0.1)  # both runs stopping alike would contradict the seed
    assert m["loss_step20"].value < m["loss_step1"].value
    assert_flips(m["loss_step20"], 2.5)
    assert_flips(m["loss_step1"], 5.3 if m["loss_step1"].verdict.kind != "reproduced" else 2.5)
    # "the answer is right" is judged on its own: the tiny demo model gets few right
    right = m["answer_without_eos"]
    assert right.verdict.kind == ("reproduced" if right.value >= 0.9 else "not reproduced")
    assert_flips(right, 1.0 if right.value < 0.9 else 0.2)
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000
