"""runs/findings: a damaged doctor.json is reported in ``problem``, never raised (runs show still shows the run)."""

from __future__ import annotations

import json

import pytest

from expkit.runs.findings import read_recorded_findings

FINDING = {"kind": "bug", "check": "missing_zero_grad", "message": "left over", "file": "t.py", "line": 3}


def test_a_well_formed_record_is_read(tmp_path):
    (tmp_path / "doctor.json").write_text(json.dumps({"findings": [{**FINDING, "step": 2}], "steps_watched": 2}))
    got = read_recorded_findings(tmp_path)
    assert got is not None and got.problem is None and got.steps_watched == 2
    assert [(f.check, f.file, f.line, f.step) for f in got.findings] == [("missing_zero_grad", "t.py", 3, 2)]


@pytest.mark.parametrize(
    "text",
    [
        '{"findings": [{"check": "c", "message": "m", "step": 1e400}]}',  # int(inf): OverflowError
        '{"findings": [{"check": "c", "message": "m", "step": "two"}]}',
        '{"findings": ' + "[" * 100_000 + "]" * 100_000 + "}",  # deeper than json's recursion limit
        '{"findings": [',
    ],
)
def test_a_damaged_record_is_a_problem_not_an_exception(tmp_path, text):
    (tmp_path / "doctor.json").write_text(text)
    got = read_recorded_findings(tmp_path)
    assert got is not None and got.findings == () and got.problem is not None
    assert got.problem.startswith("doctor.json unreadable:")
