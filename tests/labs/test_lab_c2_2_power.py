"""Lab C2.2, the extension: power curve and paired vs unpaired items for a 5-point difference."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c2_2_paired_needs_fewer_items(tmp_path):
    (lab,) = select_labs(["C2.2"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["n_unpaired_5pt"].value == 1248  # statsmodels NormalIndPower, see tests/stats/test_power.py
    assert 0.1 < m["item_corr"].value < 0.6  # measured on the simulated eval, not set
    assert m["n_paired_5pt"].value < m["n_unpaired_5pt"].value
    # the simulated crossing agrees with the formula within Monte Carlo error (300 evals per n)
    sim = float(m["n_paired_5pt"].detail.split(": ")[1].split(" ")[0])
    assert abs(sim - m["n_paired_5pt"].value) / m["n_paired_5pt"].value < 0.35
    assert 9 < m["power_n80_analytic"].value < 12
    assert len(res.figures) == 2 and (tmp_path / res.figures[1]).stat().st_size > 10_000
