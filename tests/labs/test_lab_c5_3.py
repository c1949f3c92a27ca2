"""Lab C5.3: the template decides which tokens count; derived spans agree with the markers."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c5_3_template_decides_the_loss(tmp_path):
    (lab,) = select_labs(["C5.3"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert m["template_decides_loss"].value is True
    assert m["template_decides_loss"].verdict.kind == "demonstrated"  # behaviour: never "reproduced"
    assert_flips(m["template_decides_loss"], False)
    assert 0 < m["trained_tokens"].value < m["tokens"].value
    assert "[<|im_end|>]" in m["tokens"].detail  # the end of turn is bracketed as trained
    assert m["derived_agree"].value == 1.0
    assert (tmp_path / res.figures[0]).stat().st_size > 5_000
