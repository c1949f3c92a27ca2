"""Lab C5.7: one traced step gives the path train() -> ... -> compute_loss and the calls below it."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c5_7_reading_path(tmp_path):
    (lab,) = select_labs(["C5.7"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    path = m["reading_path"].detail
    assert path.startswith("Trainer.train") and path.endswith("SFTTrainer.compute_loss [trl]")
    assert "training_step" in path
    assert m["calls_below"].value >= 3 and "forward" in m["calls_below"].detail
