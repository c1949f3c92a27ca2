"""``runs show`` shows what ``expkit doctor`` recorded in a run (doctor.json beside run.json): the count and
each finding's check, file:line and message, in the human view and in --json (issue 21: it was not shown).

The run is a real ``runs exec``; its program writes doctor.json the way doctor does under ``runs exec``:
doctor's own writer (``expkit.doctor.record.write_run_record``) into the run directory named by the
environment (``EXPKIT_RUN_DIR``), with findings in ``Finding.to_json``'s form."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

PY = sys.executable
PROGRAM = textwrap.dedent("""
    from expkit.doctor.findings import Finding
    from expkit.doctor.record import run_dir_from_environment, write_run_record

    findings = [
        Finding("bug", "missing_zero_grad", "46% of the gradient norm is left over from the previous step",
                "train.py", 20, {"stale_fraction_of_grad_norm": 0.46}, "call optimizer.zero_grad()", 2,
                "train.py", 24),
        Finding("performance", "dataloader_stall", "the step waited 80% of its time on data", None, None, {}, "", 1),
    ]
    write_run_record(run_dir_from_environment(), findings=[f.to_json() for f in findings], steps_watched=2,
                     source="expkit doctor")
    print("done")
""")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EXPKIT_STORE", raising=False)
    return tmp_path / "runs"


def test_runs_show_lists_the_doctor_findings(cli, store: Path) -> None:
    r = cli("runs", "exec", "--name", "d", "--", PY, "prog.py")
    assert r.exit_code == 0, r.stderr
    shown = cli("runs", "show", "d")
    assert shown.exit_code == 0
    lines = shown.stdout.splitlines()
    head = lines.index("doctor (expkit doctor, 2 optimizer step(s) watched): 2 finding(s)")
    assert lines[head + 1] == (
        "  BUG [missing_zero_grad] at train.py:20 (seen at train.py:24) (step 2): "
        "46% of the gradient norm is left over from the previous step"
    )
    assert lines[head + 2] == "  PERF [dataloader_stall] (step 1): the step waited 80% of its time on data"

    doc = json.loads(cli("runs", "show", "d", "--json").stdout)["result"]["doctor"]
    assert doc["source"] == "expkit doctor" and doc["steps_watched"] == 2 and doc["problem"] is None
    assert [(f["check"], f["file"], f["line"], f["seen_line"]) for f in doc["findings"]] == [
        ("missing_zero_grad", "train.py", 20, 24),
        ("dataloader_stall", None, None, None),
    ]


def test_a_run_without_doctor_has_no_doctor_key_and_a_damaged_record_is_said(cli, store: Path) -> None:
    assert cli("runs", "exec", "--name", "plain", "--", PY, "-c", "print(1)").exit_code == 0
    plain = cli("runs", "show", "plain", "--json")
    assert "doctor" not in json.loads(plain.stdout)["result"]
    assert "doctor" not in cli("runs", "show", "plain").stdout
    (run_dir,) = [p for p in store.iterdir() if p.is_dir() and (p / "run.json").exists()]
    (run_dir / "doctor.json").write_text('{"findings": [')
    shown = cli("runs", "show", "plain")
    assert shown.exit_code == 0 and "doctor: doctor.json unreadable:" in shown.stdout
