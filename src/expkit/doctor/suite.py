"""Scoring ``expkit doctor`` against a bug suite: programs that each declare the check that must fire
(``doctor-expect: NAME`` in the module docstring) and clean programs that must draw no finding. A program
that needs a launcher says so (``doctor-command: torchrun --standalone --nproc-per-node 2 {program}``)."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from expkit.doctor.runner import DoctorRequest, DoctorResult, run_doctor

__all__ = [
    "ProgramOutcome",
    "SuiteScore",
    "expected_check",
    "iter_suite",
    "program_command",
    "run_program",
    "run_programs",
    "run_suite",
    "score_outcomes",
]

_EXPECT = re.compile(r"^doctor-expect:\s*(\S+)\s*$", re.MULTILINE)
_COMMAND = re.compile(r"^(?:#\s*)?doctor-command:\s*(.+?)\s*$", re.MULTILINE)  # in the docstring or a comment
# launchers named in a doctor-command line, run with this interpreter (no reliance on PATH)
_LAUNCHERS = {"python": (sys.executable,), "torchrun": (sys.executable, "-m", "torch.distributed.run")}


@dataclass(frozen=True)
class ProgramOutcome:
    """One suite program through doctor: ``caught`` (a bug program whose expected check fired within the
    watched steps) or ``clean_ok`` (a clean program with no finding)."""

    program: str
    expected: str | None  # None: a clean program
    checks_found: tuple[str, ...]
    steps_watched: int
    exit_code: int
    elapsed_s: float

    @property
    def caught(self) -> bool:
        return self.expected is not None and self.expected in self.checks_found

    @property
    def clean_ok(self) -> bool:
        return self.expected is None and not self.checks_found and self.ran

    @property
    def ran(self) -> bool:
        """The program ran and stepped while watched (a program that crashed proves nothing)."""
        return self.exit_code == 0 and self.steps_watched > 0


@dataclass(frozen=True)
class SuiteScore:
    """Recall on the bug programs and false alarms on the clean ones."""

    bugs: int
    caught: int
    clean: int
    clean_with_findings: int
    did_not_run: int
    outcomes: tuple[ProgramOutcome, ...]

    @property
    def recall(self) -> float:
        return self.caught / self.bugs if self.bugs else float("nan")


def expected_check(path: Path) -> str | None:
    """The ``doctor-expect:`` line of a program's text, or None (a clean program)."""
    m = _EXPECT.search(path.read_text(encoding="utf-8"))
    return m.group(1) if m else None


def program_command(path: Path) -> tuple[str, ...]:
    """The argv that runs a suite program: its ``doctor-command:`` line (``{program}`` is its path; ``python``
    and ``torchrun`` run with this interpreter), else ``python PROGRAM``."""
    m = _COMMAND.search(path.read_text(encoding="utf-8"))
    if m is None:
        return (sys.executable, str(path))
    words = [w.replace("{program}", str(path)) for w in shlex.split(m.group(1))]
    return (*_LAUNCHERS.get(words[0], (words[0],)), *words[1:])


def iter_suite(root: Path) -> Iterator[Path]:
    """The programs under ``root/bugs`` and ``root/clean``, sorted."""
    for sub in ("bugs", "clean"):
        yield from sorted((root / sub).glob("*.py"))


def outcome_of(path: Path, result: DoctorResult) -> ProgramOutcome:
    return ProgramOutcome(
        program=f"{path.parent.name}/{path.name}",
        expected=expected_check(path),
        checks_found=tuple(sorted({f.check for f in result.findings})),
        steps_watched=result.steps_watched,
        exit_code=result.exit_code,
        elapsed_s=result.elapsed_s,
    )


def score_outcomes(outcomes: list[ProgramOutcome]) -> SuiteScore:
    bugs = [o for o in outcomes if o.expected is not None]
    clean = [o for o in outcomes if o.expected is None]
    return SuiteScore(
        bugs=len(bugs),
        caught=sum(o.caught for o in bugs),
        clean=len(clean),
        clean_with_findings=sum(bool(o.checks_found) for o in clean),
        did_not_run=sum(not o.ran for o in outcomes),
        outcomes=tuple(outcomes),
    )


def run_program(path: Path, request: DoctorRequest | None = None) -> ProgramOutcome:
    """One suite program through doctor (:func:`program_command`, stopped after the watched steps unless
    ``request`` says otherwise)."""
    base = request or DoctorRequest(command=(), stop_after_watch=True, stdout_to_stderr=True)
    return outcome_of(path, run_doctor(replace(base, command=program_command(path), cwd=str(path.parent))))


def run_programs(paths: list[Path], *, request: DoctorRequest | None = None, workers: int = 1) -> SuiteScore:
    """Run these suite programs through doctor, ``workers`` at a time (each is its own process tree; the
    cost is mostly interpreter start and ``import torch``), and score the findings."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(lambda p: run_program(p, request), [p.resolve() for p in paths]))
    return score_outcomes(outcomes)


def run_suite(root: Path, *, request: DoctorRequest | None = None, workers: int = 1) -> SuiteScore:
    """Run every program of the suite under ``root`` (:func:`iter_suite`) and score the findings."""
    return run_programs(list(iter_suite(root.resolve())), request=request, workers=workers)
