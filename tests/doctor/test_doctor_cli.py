"""``expkit doctor`` end to end: a real child process with the bootstrap, the JSON envelope, --strict,
--steps stopping the program, the program's own exit code, and bad usage."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from expkit.cli.app import app

pytest.importorskip("torch")

SUITE = Path(__file__).parent / "suite"
RUNNER = CliRunner()


def _json(result):
    return json.loads(result.stdout)["result"]


def test_bug_program_json_names_the_check_line_and_evidence():
    prog = SUITE / "bugs" / "mlp_missing_zero_grad.py"
    res = RUNNER.invoke(app, ["doctor", "--steps", "2", "--json", "--", sys.executable, str(prog)])
    assert res.exit_code == 0, res.output
    out = _json(res)
    assert out["steps_watched"] == 2 and out["stopped"] is True and out["exit_code"] == 0
    (f,) = out["findings"]
    assert f["kind"] == "bug" and f["check"] == "missing_zero_grad"
    assert f["file"] == str(prog)
    assert prog.read_text().splitlines()[f["line"] - 1].strip() == "loss.backward()"
    assert f["evidence"]["stale_fraction_of_grad_norm"] > 0.1 and f["fix"]


def test_strict_exits_1_with_findings_and_0_on_a_clean_program(tmp_path):
    bug = SUITE / "bugs" / "zero_grad_between_backward_and_step.py"
    assert RUNNER.invoke(app, ["doctor", "--steps", "2", "--strict", "--", sys.executable, str(bug)]).exit_code == 1
    clean = SUITE / "clean" / "regression_full_batch.py"
    res = RUNNER.invoke(app, ["doctor", "--steps", "2", "--strict", "--json", "--", sys.executable, str(clean)])
    assert res.exit_code == 0 and _json(res)["findings"] == [] and _json(res)["steps_watched"] == 2


def test_program_exit_code_is_kept_and_a_program_without_torch_is_reported(tmp_path):
    res = RUNNER.invoke(app, ["doctor", "--json", "--", sys.executable, "-c", "import sys; sys.exit(7)"])
    out = _json(res)
    assert res.exit_code == 0 and out["exit_code"] == 7 and out["armed"] is False and out["steps_watched"] == 0


def test_bad_usage_exits_2():
    assert RUNNER.invoke(app, ["doctor", "--steps", "0", "--", sys.executable, "-c", "pass"]).exit_code == 2
    assert RUNNER.invoke(app, ["doctor", "--", "/no/such/program"]).exit_code == 2
