"""Findings land in the run directory (``doctor.json``) when ``EXPKIT_RUN_DIR`` is set, as ``runs exec`` sets it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402
from expkit.doctor.record import RECORD_NAME, run_dir_from_environment  # noqa: E402
from expkit.doctor.runner import DoctorRequest, run_doctor  # noqa: E402

SUITE = Path(__file__).parent / "suite"


def test_watch_writes_its_findings_into_the_run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPKIT_RUN_DIR", str(tmp_path))
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2):
        for _ in range(2):
            nn.functional.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,))).backward()
            opt.step()  # no zero_grad
    record = json.loads((tmp_path / RECORD_NAME).read_text())
    assert record["source"] == "watch()" and record["steps_watched"] == 2
    assert [f["check"] for f in record["findings"]] == ["missing_zero_grad"]


def test_no_run_dir_no_record(tmp_path, monkeypatch):
    monkeypatch.delenv("EXPKIT_RUN_DIR", raising=False)
    assert run_dir_from_environment() is None
    assert run_dir_from_environment({"EXPKIT_RUN_DIR": str(tmp_path / "gone")}) is None


def test_doctor_under_a_run_writes_the_merged_findings(tmp_path):
    prog = SUITE / "bugs" / "zero_grad_between_backward_and_step.py"
    request = DoctorRequest(
        command=(sys.executable, str(prog)), stop_after_watch=True, env={"EXPKIT_RUN_DIR": str(tmp_path)}
    )
    result = run_doctor(request)
    record = json.loads((tmp_path / RECORD_NAME).read_text())
    assert record["source"] == "expkit doctor" and record["steps_watched"] == result.steps_watched == 2
    checks = [f["check"] for f in record["findings"]]
    assert checks == [f.check for f in result.findings]
    assert "zero_grad_before_step" in checks  # (step_changes_nothing too: zeroed gradients move no weight)
