"""Lab discovery, selection and failure isolation."""

from __future__ import annotations

import pytest

from expkit.errors import UsageError
from expkit.labs.base import Lab
from expkit.labs.registry import all_labs, select_labs
from expkit.labs.runner import run_labs


def test_every_lab_declares_claims_and_seed_figures_in_claims_md():
    labs = all_labs()
    assert any(lab.id == "C2.2" for lab in labs)
    for lab in labs:
        assert lab.claims and all(c.startswith("C") for c in lab.claims), lab.id
        for s in lab.seed_figures:
            assert s.text, (lab.id, s.key)


def test_select_by_lab_or_claim_id_case_insensitive():
    assert [lab.id for lab in select_labs(["c2.2"])] == ["C2.2"]


def test_unknown_lab_lists_known_ids():
    with pytest.raises(UsageError, match=r"NO_SUCH_LAB.*C2\.2"):
        select_labs(["NO_SUCH_LAB"])


def test_a_failing_lab_is_reported_and_the_others_still_run(tmp_path):
    def boom(ctx):
        raise ValueError("lab broke <here>")

    bad = Lab(id="X9.9", title="broken", claims=("X9.9",), seed_figures=(), run=boom)
    good = select_labs(["C2.2"])[0]
    report = run_labs([bad, good], out_dir=tmp_path, quick=True)
    assert [r.status for r in report.results] == ["failed", "ok"]
    assert "ValueError: lab broke <here>" in report.results[0].error
    html = (tmp_path / "index.html").read_text()
    assert "lab broke &lt;here&gt;" in html and "lab failed" in html


def test_rule_changes_carry_when_why_and_which_rule_judges():
    """issue 36: a lab whose rule changed after its first run says when (date, commit), why, and judges by the rule
    as first stated unless the seed's own words argue for the change; the report prints it under the lab."""
    from expkit.labs.base import LabResult
    from expkit.render.report import rule_history_lines

    for lab_id, key, seed_argued in (
        ("C6.5", "seed_spread_20", True),
        ("C6.2", "int8_decode_speedup", False),
        ("C6.2", "weight_free_train_bound", True),
        ("C1.1", "generator_peak", True),
        ("C1.1", "list_ratio", True),
        ("C1.2", "thread_speedup", True),
        ("C5.6", "loss_fall_20", True),
        # a later reading of `git log -p` (issue 36): rules changed after issue 12 declared them, with no history
        ("C2.3", "rule_nonoverlap", True),
        ("C2.4", "max_err_float32", True),
        ("C3.7", "item_sync_cuda", False),
        ("C3.8", "bf16_slower", False),
        ("C4.3", "peak_per_gpu", True),
        ("C4.6", "attribution", True),
        ("C5.5", "masked_all", True),
        ("C5.5", "mostly_masked", True),
        ("C5.6", "stop_gap", True),
    ):
        (lab,) = select_labs([lab_id])
        change = next(c for c in lab.rule_history if c.key == key)
        assert change.date.startswith("2026-") and len(change.commit) >= 7 and change.first and change.changed
        assert change.key in {f.key for f in lab.seed_figures} | {"weight_free_train_bound", "list_ratio_chat"}
        assert bool(change.seed_text) is seed_argued
        assert change.judged_by.startswith("the changed rule" if seed_argued else "the rule as first stated")
        res = LabResult(lab.id, lab.title, lab.claims, "ok", "quick", 0.0, rule_history=lab.rule_history)
        lines = rule_history_lines(res)
        assert any(change.commit in line and change.why in line for line in lines)
    unchanged = LabResult("C2.2", "t", ("C2.2",), "ok", "quick", 0.0)
    assert rule_history_lines(unchanged) == ["rules as first stated (no change after the lab first ran)"]
