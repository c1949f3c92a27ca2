"""The bug suite through ``expkit doctor``: every program a real child process, stopped after the two
watched steps, two at a time. The test runs a representative subset: an HF loop, Lightning, DDP under
torchrun and a plain table, bug and clean. The whole suite's score is the benchmark's (a process per
program, ~1.5 min of CPU), judged against the issue's targets scaled to the suite's size (>= 19 of 20
bugs, 0 findings on >= 14 of 15 clean programs) by:

    .venv/bin/python benchmarks/bench_doctor.py --own-suite --split dev --check
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from expkit.doctor.suite import (
    expected_check,
    iter_suite,
    program_command,
    run_programs,
    score_outcomes,
)

pytest.importorskip("torch")

SUITE = Path(__file__).parent / "suite"
# the default run's sample (the CLI tests add a plain bug and a plain clean program): each kind of program once
SUBSET = (
    "bugs/hf_pad_in_loss.py",  # HF causal LM in a plain loop: the loss-mask check
    "bugs/lightning_softmax_before_ce.py",  # Lightning
    "bugs/ddp_sampler_without_set_epoch.py",  # DDP, gloo, two processes under torchrun
    "bugs/tabular_one_hot_label_leak.py",  # a plain loop on a table
    "clean/hf_sft_masked_right.py",  # the loss-mask bugs' clean twin
    "clean/hf_trainer_tiny_gpt2.py",  # HF Trainer
)


def test_every_bug_program_declares_one_registered_check():
    from expkit.doctor.checks import all_checks

    # the names a check may report under (a check class can report several, e.g. modes)
    reported = set()
    for path in Path(__import__("expkit.doctor.checks", fromlist=["x"]).__path__[0]).glob("*.py"):
        reported |= {line.split('"')[1] for line in path.read_text().splitlines() if 'check="' in line}
    reported |= set(all_checks())
    programs = list(iter_suite(SUITE))
    bugs = [p for p in programs if p.parent.name == "bugs"]
    assert len(bugs) >= 20 and len(programs) - len(bugs) >= 15  # the suite size
    for p in bugs:
        assert expected_check(p) in reported, p
    for p in programs:
        if p.parent.name == "clean":
            assert expected_check(p) is None, p


def test_a_program_names_its_launcher():
    ddp = SUITE / "bugs" / "ddp_sampler_without_set_epoch.py"
    assert program_command(ddp) == (
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(ddp),
    )
    plain = SUITE / "bugs" / "mlp_missing_zero_grad.py"
    assert program_command(plain) == (sys.executable, str(plain))


def _report(score):
    return "\n".join(
        f"{o.program}: expected {o.expected}, found {list(o.checks_found)}, steps {o.steps_watched}, exit {o.exit_code}"
        for o in score.outcomes
    )


def test_subset_bugs_caught_and_clean_programs_silent():
    score = score_outcomes(list(run_programs([SUITE / p for p in SUBSET], workers=2).outcomes))
    report = _report(score)
    print(report)
    assert score.did_not_run == 0, report
    assert (score.bugs, score.clean) == (4, 2), report
    assert score.caught == score.bugs and score.clean_with_findings == 0, report


@pytest.mark.parametrize(
    "line",
    [
        "doctor-command: torchrun --nproc-per-node 2 {program}",
        "# doctor-command: torchrun --nproc-per-node 2 {program}",
    ],
)
def test_a_launcher_is_read_from_the_docstring_or_a_comment(tmp_path, line):
    # batch16/clean/ddp_no_sync_accumulation_torchrun.py names torchrun in a comment: it ran as plain python
    prog = tmp_path / "p.py"
    prog.write_text(f'"""A DDP program."""\n\n{line}\nimport torch\n')
    argv = program_command(prog)
    assert argv[-3:] == ("--nproc-per-node", "2", str(prog)) and "torch.distributed.run" in argv
