"""Lab C5.7: one traced step gives the path train() -> ... -> compute_loss and the calls below it."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c5_7_reading_path(tmp_path):
    (lab,) = select_labs(["C5.7"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    # issue 12: reachability of compute_loss is true of any Trainer: shown, not "reproduced"
    assert m["reading_path"].verdict.kind == "demonstrated"
    assert_flips(m["reading_path"], False)
    path = m["reading_path"].detail
    assert path.startswith("Trainer.train") and path.endswith("SFTTrainer.compute_loss [trl]")
    assert "training_step" in path
    assert m["calls_below"].value >= 3 and "forward" in m["calls_below"].detail
