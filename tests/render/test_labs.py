"""The ``labs run`` console lines: judged figures, their provenance, and the verdict counts split by provenance."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from expkit.labs.base import AtMost, LabResult, Measurement, judged, not_measured
from expkit.render.labs import render_lab_run


@dataclass(frozen=True)
class _Report:
    """What render_lab_run reads of a LabReport: its results."""

    results: tuple[LabResult, ...]


def _result(measurements: tuple[Measurement, ...]) -> LabResult:
    return LabResult(
        id="CX.1", title="t", claims=("CX.1",), status="ok", budget="quick", elapsed_s=0.1, measurements=measurements
    )


def test_run_lines_split_counts_by_provenance(capsys, tmp_path):
    rule = AtMost(16.0)
    measured_ok = judged("a", "measured fits", 12.0, "GB", rule=rule)
    measured_bad = judged("b", "measured over", 20.0, "GB", rule=rule)
    computed_bad = not_measured(judged("c", "ledger peak", 18.25, "GB", rule=rule))
    report = _Report((_result((measured_ok, measured_bad, computed_bad)),))
    render_lab_run(report, html_path=tmp_path / "index.html")
    out = capsys.readouterr().out
    assert "ledger peak: 18.25 GB (computed)" in out
    assert "measured fits: 12 GB ->" in out  # a measured value carries no mark
    lines = [line for line in out.splitlines() if line.startswith("verdicts on")]
    assert lines[0].startswith("verdicts on measured figures: 1 reproduced")
    assert "1 not reproduced" in lines[0]
    assert lines[1].startswith("verdicts on computed figures: 0 reproduced")
    assert "1 not reproduced" in lines[1]
    assert len(lines) == 2  # no datasheet figure: no datasheet line
    assert not Path(tmp_path / "index.html").exists()  # the renderer only prints
