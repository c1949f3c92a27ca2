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
    assert res.exit_code == 7 and out["exit_code"] == 7 and out["armed"] is False and out["steps_watched"] == 0


CRASH_BEFORE_STEP = """
import torch
model = torch.nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 5)
loss = model(x).sum()  # shapes do not match: the program dies before its first step
"""


@pytest.mark.parametrize("strict", [False, True])
def test_a_crash_before_the_first_step_is_the_programs_own_exit_code(tmp_path, strict):
    prog = tmp_path / "crash.py"
    prog.write_text(CRASH_BEFORE_STEP)
    res = RUNNER.invoke(app, ["doctor", *(["--strict"] if strict else []), "--", sys.executable, str(prog)])
    assert res.exit_code == 1, res.output
    assert "failed (exit 1) before its first optimizer step" in res.stdout
    code = "import torch, sys; sys.exit(5)"
    res = RUNNER.invoke(app, ["doctor", "--json", *(["--strict"] if strict else []), "--", sys.executable, "-c", code])
    assert res.exit_code == 5 and _json(res)["exit_code"] == 5 and _json(res)["armed"] is True


NEVER_STEPS = """
import signal, time
import torch
if {ignore_term}:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
model = torch.nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
time.sleep(120)  # never steps
"""


@pytest.mark.parametrize("ignore_term", [False, True])
def test_max_wait_stops_a_program_that_never_steps(tmp_path, ignore_term):
    prog = tmp_path / "never.py"
    prog.write_text(NEVER_STEPS.format(ignore_term=ignore_term))
    res = RUNNER.invoke(app, ["doctor", "--max-wait", "1", "--json", "--", sys.executable, str(prog)])
    out = _json(res)
    assert res.exit_code == 1 and out["timed_out"] is True and out["steps_watched"] == 0, res.output
    assert out["elapsed_s"] < 60  # stopped by doctor, not by the program's own 120 s sleep
    res = RUNNER.invoke(app, ["doctor", "--max-wait", "1", "--", sys.executable, str(prog)])
    assert res.exit_code == 1 and "no optimizer step in 1 s" in res.stdout


def test_max_wait_stops_a_program_that_is_not_python():
    res = RUNNER.invoke(app, ["doctor", "--max-wait", "0.5", "--json", "--", "sleep", "120"])
    out = _json(res)
    assert res.exit_code == 1 and out["timed_out"] is True and out["armed"] is False and out["elapsed_s"] < 60


STEPS_THEN_RUNS_ON = """
import time
import torch
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.randn(8, 3)).pow(2).mean().backward()
    opt.step()
time.sleep({sleep})  # after the watch: the rest of a training run, not doctor's to time
"""


def test_max_wait_does_not_stop_a_program_after_its_watch(tmp_path):
    import subprocess
    import time

    t0 = time.perf_counter()  # the limit adapts to this machine's load: 3x its torch start-up, then 2 s more
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    max_wait = round(3 * (time.perf_counter() - t0) + 2, 1)
    prog = tmp_path / "runs_on.py"
    prog.write_text(STEPS_THEN_RUNS_ON.format(sleep=max_wait + 1.5))
    res = RUNNER.invoke(app, ["doctor", "--max-wait", str(max_wait), "--json", "--", sys.executable, str(prog)])
    out = _json(res)
    assert res.exit_code == 0 and out["timed_out"] is False and out["steps_watched"] == 2, res.output


def test_strict_exit_codes_for_no_step_and_a_broken_check():
    from expkit.doctor.runner import DoctorResult, doctor_exit_code

    base = DoctorResult(("p",), 0, 2, 2, True, False, 0.1, ())
    assert doctor_exit_code(base, strict=True) == 0
    no_step = DoctorResult(("p",), 0, 2, 0, True, False, 0.1, ())
    assert doctor_exit_code(no_step, strict=False) == 0 and doctor_exit_code(no_step, strict=True) == 1
    broken = DoctorResult(("p",), 0, 2, 2, True, False, 0.1, (), check_errors=("grads: KeyError",))
    assert doctor_exit_code(broken, strict=True) == 3 and doctor_exit_code(broken, strict=False) == 0
    failed = DoctorResult(("p",), 139, 2, 2, True, False, 0.1, (), check_errors=("x: y",))
    assert doctor_exit_code(failed, strict=True) == 139


def test_bad_usage_exits_2():
    assert RUNNER.invoke(app, ["doctor", "--steps", "0", "--", sys.executable, "-c", "pass"]).exit_code == 2
    assert RUNNER.invoke(app, ["doctor", "--", "/no/such/program"]).exit_code == 2
    res = RUNNER.invoke(app, ["doctor", "--max-wait", "-1", "--", sys.executable, "-c", "pass"])
    assert res.exit_code == 2 and "--max-wait" in res.output


def test_list_checks_lists_every_registered_check_with_what_it_finds():
    """--list-checks is read from the registry, so a new check cannot be left out of it (the --help list was
    written by hand and fell behind the checks of issue 32); each check says what it finds."""
    from expkit.doctor.checks import all_checks

    res = RUNNER.invoke(app, ["doctor", "--list-checks", "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.output)["result"]
    others = [n for cls in all_checks().values() for n in cls.reports]
    assert [c["name"] for c in listed] == sorted([*all_checks(), *others])
    assert all(len(c["finds"]) > 20 for c in listed), [c["name"] for c in listed if len(c["finds"]) <= 20]
    human = RUNNER.invoke(app, ["doctor", "--list-checks"])
    assert human.exit_code == 0 and f"{len(listed)} checks" in human.output


def test_every_finding_name_a_check_can_report_is_listed():
    """A finding's name (``probe.report(check="pad_in_loss", ...)``) must be one --list-checks explains: read from
    every string a check's source can pass as ``check=`` (``"eos_masked" if ... else "answer_masked"`` included)."""
    import ast
    from pathlib import Path

    import expkit.doctor.checks as package
    from expkit.doctor.checks import describe_checks

    reported: set[str] = set()
    for path in Path(package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "report":
                for kw in node.keywords:
                    if kw.arg == "check":
                        reported |= {
                            c.value
                            for c in ast.walk(kw.value)
                            if isinstance(c, ast.Constant) and isinstance(c.value, str)
                        }
    listed = {c.name for c in describe_checks()}
    assert reported and reported <= listed, sorted(reported - listed)


def test_no_command_is_a_usage_error():
    res = RUNNER.invoke(app, ["doctor"])
    assert res.exit_code == 2 and "no command given" in res.output


SCRIPTED_NO_GRAD = """
import torch
from torch.distributed.optim import ZeroRedundancyOptimizer  # scripts classes that use torch.no_grad on import


@torch.jit.script
def doubled(x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        y = x * 2
    return y + x


model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(doubled(torch.randn(8, 4))).sum().backward()
    opt.step()
print("trained")
"""


def test_torchscript_compiles_no_grad_under_the_watch(tmp_path):
    """The probe wraps no_grad's __enter__; TorchScript compiles `with torch.no_grad()` from that method's
    source, so the wrapper must hand it the original (batch 8's clean ZeroRedundancyOptimizer program
    crashed on import under doctor)."""
    prog = tmp_path / "scripted.py"
    prog.write_text(SCRIPTED_NO_GRAD)
    res = RUNNER.invoke(app, ["doctor", "--json", "--", sys.executable, str(prog)])
    out = _json(res)
    assert res.exit_code == 0 and out["exit_code"] == 0 and out["steps_watched"] == 2, res.output
