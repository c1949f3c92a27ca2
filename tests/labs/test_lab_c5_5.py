"""Lab C5.5: the masked fraction of one conversation and of the data set, measured by the audit."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c5_5_masked_fraction(tmp_path):
    (lab,) = select_labs(["C5.5"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    one, all_, no_sys = m["masked_one"].value, m["masked_all"].value, m["masked_no_system"].value
    assert 50 < one < 100 and 50 < all_ < 100
    assert no_sys < all_  # dropping the system prompt leaves a larger share trained
    assert m["masked_one"].seed.value == 85.0
    # the verdict follows from the measured fraction: within 5 points of the seed's 85%, else differs (data)
    assert m["masked_one"].verdict.kind == ("reproduced" if abs(one - 85.0) <= 5.0 else "differs")
