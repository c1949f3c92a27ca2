"""Lab C1.5: the protocol methods a training loop calls, counted."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_5_counts_protocol_calls(tmp_path):
    (lab,) = select_labs(["C1.5"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["protocols_seen"].value is True and m["protocols_seen"].detail.startswith("9/9 observed")
    assert m["getitem_calls"].value == 6  # 6 items
    assert m["next_calls"].value == 3  # 2 batches of <= 4, then StopIteration
    assert m["call_vs_forward"].value == "4/4"  # 2 direct calls + 2 through the decorated function
    judged = judged_measurements(res)
    assert set(judged) == {"protocols_seen"} and judged["protocols_seen"].verdict.kind == "demonstrated"
    assert_verdict_follows(judged["protocols_seen"])
    assert_flips(judged["protocols_seen"], False)
