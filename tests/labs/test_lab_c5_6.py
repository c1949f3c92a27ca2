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
    # the gap counts a stop on any token of the saved eos list: never more stops without than on <|im_end|> alone
    assert m["stop_without_eos_saved_list"].value >= m["stop_without_eos"].value
    assert "saved eos list" in m["stop_gap"].detail and "never closed" in m["stop_gap"].detail
    assert_flips(m["stop_gap"], 0.1 if m["stop_gap"].verdict.kind == "reproduced" else 0.9)
    # the loss is judged on its fall, the levels are shown beside the seed's
    assert m["loss_step20"].value < m["loss_step1"].value
    assert m["loss_step1"].verdict is None and m["loss_step20"].verdict is None
    assert m["loss_fall_20"].value == pytest.approx(m["loss_step1"].value / m["loss_step20"].value)
    assert_flips(m["loss_fall_20"], 1.0 if m["loss_fall_20"].verdict.kind == "reproduced" else 3.1)
    # "the answer is right" is judged on its own: the tiny demo model gets few right
    right = m["answer_without_eos"]
    assert right.verdict.kind == ("reproduced" if right.value >= 0.9 else "not reproduced")
    assert_flips(right, 1.0 if right.value < 0.9 else 0.2)
    # issue 36: the sentence follows that verdict (it said 'holds only for that share' at 0% right)
    holds = right.verdict.kind == "reproduced"
    assert ("'the answer is right' holds here" in res.explanation) == holds
    assert "holds only for that share" not in res.explanation
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000


def test_stops_on_saved_eos_counts_any_listed_token_before_a_new_turn():
    from expkit.labs.lab_c5_6_stop_token import stops_on_saved_eos

    kw = dict(eos_tokens=["<|im_end|>", "<|endoftext|>"], other_special=["<|im_start|>"])
    assert stops_on_saved_eos("42", stopped=True, **kw)
    assert stops_on_saved_eos("42 and more<|endoftext|>junk", stopped=False, **kw)
    assert not stops_on_saved_eos("42 and more, never ending", stopped=False, **kw)
    # a hallucinated next turn before the eos token is no stop
    assert not stops_on_saved_eos("42<|im_start|>user\nhi<|endoftext|>", stopped=False, **kw)
