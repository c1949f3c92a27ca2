"""Lab discovery, selection and failure isolation."""

from __future__ import annotations

import pytest

from expkit.errors import UsageError
from expkit.labs.base import Lab, verdict_within
from expkit.labs.registry import all_labs, select_labs
from expkit.labs.runner import run_labs


def test_every_lab_declares_claims_and_seed_figures_in_claims_md():
    labs = all_labs()
    assert any(l.id == "C2.2" for l in labs)
    for l in labs:
        assert l.claims and all(c.startswith("C") for c in l.claims), l.id
        for s in l.seed_figures:
            assert s.text, (l.id, s.key)


def test_select_by_lab_or_claim_id_case_insensitive():
    assert [l.id for l in select_labs(["c2.2"])] == ["C2.2"]


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


def test_verdict_within():
    assert str(verdict_within(10.96, 10.9, abs_tol=0.1)) == "reproduced"
    assert str(verdict_within(20.0, 10.9, abs_tol=0.1, differs_reason="2 cores")) == "differs: 2 cores"
    assert verdict_within(20.0, 10.9, rel_tol=0.1).kind == "not reproduced"
    assert verdict_within(float("nan"), 1.0, rel_tol=0.1).kind == "not reproduced"
