"""Lab C2.3: real training runs over >= 5 seeds, bands and the difference interval."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c2_3_trains_seeds_and_compares_rules(tmp_path):
    (lab,) = select_labs(["C2.3"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["n_seeds"].value >= 5
    # ln(128) = 4.85 nats at init; 50 steps of a tiny char LM reach about 3
    assert 2.0 < m["final_val_a"].value < 4.5 and 2.0 < m["final_val_b"].value < 4.5
    assert m["final_val_a"].value != m["final_val_b"].value
    assert str(m["rule_nonoverlap"].verdict).startswith("reproduced")
    # "k of n": the rule was exercised (n > 0 points with bands apart) and every one of them is significant
    k, n = (int(v) for v in m["rule_nonoverlap"].value.split(" of "))
    assert k == n > 0
    # the misses lie among the points where the bands overlap: at most total - apart
    total = int(m["rule_nonoverlap"].detail.split(" eval points")[0])
    assert 0 <= m["missed_by_rule"].value <= total - n
    assert len(res.figures) == 2
    runs = sorted((tmp_path / "figures" / "C2.3" / "runs").glob("*.jsonl"))
    assert len(runs) == 2 * m["n_seeds"].value
