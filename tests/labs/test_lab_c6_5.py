"""Lab C6.5 in its quick budget: computed values, not copies of the seed's 0.14."""

from __future__ import annotations

import math
from pathlib import Path

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_5_quick(tmp_path: Path) -> None:
    (lab,) = select_labs(["C6.5"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["same_seed_identical"].value is True and m["same_seed_identical"].verdict.kind == "reproduced"
    spread, std = m["seed_spread_20"].value, m["seed_std_20"].value
    assert 0 < std <= spread < 2.0 and spread != 0.14 and math.isfinite(spread)
    # the verdict follows from the measured spread: within 50% of the seed's 0.14, else differs with a reason
    near = math.isclose(spread, 0.14, rel_tol=0.5)
    assert m["seed_spread_20"].verdict.kind == ("reproduced" if near else "differs")
    assert f"{spread:.3f} nats" in res.explanation and "bit for bit" in res.explanation
    assert (tmp_path / res.figures[0]).exists()
