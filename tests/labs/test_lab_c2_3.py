"""Lab C2.3: real training runs over >= 5 seeds launched through expkit sweep, bands, the difference
interval, and the seed's two-part rule judged by declared rules that flip on the contrary measurement."""

from __future__ import annotations

import pytest

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab
from expkit.runs.store import list_runs

pytestmark = pytest.mark.slow  # 10 training processes: ~20 s on 2 idle cores, minutes on busy ones


@pytest.fixture(scope="module")
def c2_3(tmp_path_factory):
    out = tmp_path_factory.mktemp("c2_3")
    (lab,) = select_labs(["C2.3"])
    res = run_lab(lab, out_dir=out, quick=True)
    assert res.status == "ok", res.error
    return res, out


def test_c2_3_trains_seeds_through_the_sweep_and_compares(c2_3):
    res, out = c2_3
    m = {x.key: x for x in res.measurements}
    n = m["n_seeds"].value
    assert n >= 5
    # ln(128) = 4.85 nats at init; 50 steps of a tiny char LM reach about 3
    assert 2.0 < m["final_val_a"].value < 4.5 and 2.0 < m["final_val_b"].value < 4.5
    assert m["final_val_a"].value != m["final_val_b"].value
    assert m["final_delta"].value == pytest.approx(m["final_val_b"].value - m["final_val_a"].value, abs=1e-9)
    assert len(res.figures) == 2
    # every trial is a finished, recorded run of the sweep's group in the lab's store
    runs = list_runs(out / "figures" / "C2.3" / "runs", where=["group=c2_3"]).runs
    assert len(runs) == 2 * n and {r.status for r in runs} == {"finished"}
    assert {r.seed for r in runs} == set(range(n))


def test_c2_3_rules_are_declared_and_judge_what_was_measured(c2_3):
    res, _ = c2_3
    m = {x.key: x for x in res.measurements}
    # issue 36: 'where the bands are apart the difference counts' cannot fail (the difference's interval is never
    # wider than the two half-widths added), so it is shown unjudged, with the reason
    apart = m["rule_nonoverlap"]
    assert apart.verdict is None and apart.rule is None and "cannot fail" in apart.detail
    if isinstance(apart.value, int):  # every point apart is significant: the identity the row shows
        assert f"bands apart at {apart.value}" in apart.detail
    missed = m["missed_by_rule"]
    assert missed.verdict.kind == ("reproduced" if missed.value == 0 else "not reproduced")
    assert str(missed.value) in res.explanation
    # issue 36: the log-x sentence follows the measured share, not the claim ('squeezes' only when most drops early)
    early = m["early_drop_share"]
    assert ("a linear x axis squeezes" in res.explanation) == (early.verdict.kind == "reproduced")
    assert all(x.rule is not None for x in res.measurements if x.verdict is not None)


def _contrary_early_share(holds: bool) -> float:
    """Measured, not typed in (issue 36): when the lab's run put most of the drop early, a low peak lr (3e-4, 30
    steps) whose loss falls slowly and evenly; when it did not, a high one (3e-2, 50 steps) that drops at once and
    plateaus. Each through the lab's own share on the mean train loss over 3 seeds."""
    import numpy as np

    from expkit.labs.lab_c2_3_seed_curves import early_drop_share, train_curves

    lr, steps = (3e-4, 30) if holds else (3e-2, 50)
    curves = train_curves(lr, range(3), steps, "contrary")
    return 100 * early_drop_share(np.mean([c.y for c in curves], axis=0), steps)


def _contrary_missed(holds: bool) -> int:
    """Measured, not typed in (issue 36), through the lab's own count on a real difference band. When the lab
    found no significant point with overlapping bands: two close peak lrs (3e-3 vs 2.5e-3, 5 seeds, 30 steps,
    train loss with the lab's EMA 0.9) whose curves part slowly, so the Welch interval excludes 0 for many steps
    before the bands separate. When it found some: a no-op, the same config and seeds trained twice (the same
    curves: the difference is 0 everywhere and never significant)."""
    from expkit.labs.lab_c2_3_seed_curves import missed_points, train_curves
    from expkit.stats.curves import difference_band

    if holds:
        a, b = train_curves(3e-3, range(5), 30, "a"), train_curves(2.5e-3, range(5), 30, "b")
    else:
        a, b = train_curves(3e-3, range(3), 20, "a"), train_curves(3e-3, range(3), 20, "b")
    return missed_points(difference_band(b, a, ema=0.9))


def test_c2_3_verdicts_follow_their_rules_and_flip_on_a_measured_contrary(c2_3):
    from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

    res, _ = c2_3
    m = judged_measurements(res)
    assert set(m) == {"early_drop_share", "missed_by_rule"}
    holds = {k: x.verdict.kind == "reproduced" for k, x in m.items()}
    contrary = {
        "early_drop_share": _contrary_early_share(holds["early_drop_share"]),
        "missed_by_rule": _contrary_missed(holds["missed_by_rule"]),
    }
    for key, x in m.items():
        assert_verdict_follows(x)
        assert_flips(x, contrary[key])


def test_c2_3_log_x_sentence_follows_the_share():
    from expkit.labs.lab_c2_3_seed_curves import log_x_text

    assert "squeezes into a tenth" in log_x_text(73.0, 500) and "spreads over 63%" in log_x_text(73.0, 500)
    low = log_x_text(23.0, 50)
    assert low.startswith("only 23%") and "squeezes" not in low and "does not show the case" in low
    assert "did not fall" in log_x_text(float("nan"), 50)
