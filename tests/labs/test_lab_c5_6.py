"""Lab C5.6: with <|im_end|> in the loss the model stops; with it masked it does not."""

from __future__ import annotations

import pytest

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


@pytest.mark.slow
def test_c5_6_the_end_of_turn_must_be_in_the_loss(tmp_path):
    (lab,) = select_labs(["C5.6"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["stop_with_eos"].value >= 0.8
    assert m["stop_without_eos"].value <= m["stop_with_eos"].value - 0.5
    assert str(m["stop_without_eos"].verdict) == "reproduced"
    assert m["loss_step20"].value < m["loss_step1"].value
    # the verdict follows from both ends of the measured curve: 5.3 +- 1.0 at step 1 and 1.7 +- 0.4 at step 20
    near = abs(m["loss_step1"].value - 5.3) <= 1.0 and abs(m["loss_step20"].value - 1.7) <= 0.4
    assert m["loss_step20"].verdict.kind == ("reproduced" if near else "differs")
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000
