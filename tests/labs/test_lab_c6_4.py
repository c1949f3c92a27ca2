"""Lab C6.4 in its quick budget: seven records present, diff catches the three planted changes."""

from __future__ import annotations

from pathlib import Path

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_4_quick(tmp_path: Path) -> None:
    (lab,) = select_labs(["C6.4"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert m["seven_records"].value == 7 and m["seven_records"].verdict.kind == "reproduced"
    assert m["diff_catches_three"].value is True
    assert "config lr #1" in m["diff_catches_three"].detail
    assert 0 < m["capture_s"].value < 30
    assert m["record_code"].value.endswith(", clean")  # run "before" starts on a clean commit
