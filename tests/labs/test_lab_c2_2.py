"""Lab C2.2 measures the seed's interval figures with library code."""

from __future__ import annotations

import pytest
from verdict_checks import assert_computed, assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c2_2_measures_half_width_and_resolution(tmp_path):
    (lab,) = select_labs(["C2.2"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    by_key = {m.key: m for m in res.measurements}
    hw = by_key["half_width_n80"]
    assert hw.value == pytest.approx(10.9565, abs=1e-3)  # 100*1.959964*sqrt(.25/80)
    assert hw.verdict.kind == "reproduced"
    assert hw.seed is not None and hw.seed.value == 10.9
    assert by_key["mdd_n80"].value == pytest.approx(15.49, abs=0.01)  # 100*1.959964*sqrt(2*.25/80)
    assert by_key["mdd_n80"].verdict.kind == "reproduced"
    # a true 5-point gap at n = 80 is told apart rarely: simulated, not asserted
    assert 2 < by_key["power_5pt_n80"].value < 30
    assert 700 < by_key["n_for_5pt"].value < 800  # 1.96^2*2*.25/.05^2 = 768.3
    assert res.figures and (tmp_path / res.figures[0]).stat().st_size > 10_000
    judged = judged_measurements(res)
    assert set(judged) == {"half_width_n80", "mdd_n80"}
    # issue 36: the formulas and the binomial simulations measure nothing on this machine
    assert_computed(by_key, "wilson_half_width_n80", "n_for_5pt", "power_5pt_n80")
    assert_computed(by_key, "power_n80_analytic", "item_corr", "n_unpaired_5pt", "n_paired_5pt", "paired_saving")
    for key in judged:
        assert_verdict_follows(judged[key])
    assert_flips(judged["half_width_n80"], 100 * 1.959964 * (0.25 / 60) ** 0.5)  # n = 60: 12.65 points
    assert_flips(judged["mdd_n80"], 100 * 1.959964 * (2 * 0.25 / 800) ** 0.5)  # n = 800: 4.9 points resolve
