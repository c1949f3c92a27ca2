"""Scoring ``expkit doctor`` on programs it was not written for: a manifest (``manifest.json``) lists each
program with its kind (``bug`` or ``clean``), its class, its public source, its framework, the bug's own line
(``# BUG-LINE`` in the program) and its split (``dev`` or ``held_out``, a seeded random split committed before
any check was changed). A bug is *found* when doctor reports a bug-kind finding within the watched steps,
*at its line* when a finding names the program's file at the bug line (or one line either side); a clean
program *alarms* when doctor reports any bug-kind finding on it."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.doctor.runner import DoctorRequest, DoctorResult, run_doctor
from expkit.doctor.suite import program_command

__all__ = ["BATCHES", "OutsideOutcome", "OutsideScore", "load_manifest", "run_outside", "score_split"]


@dataclass(frozen=True)
class OutsideOutcome:
    """One manifest program through doctor."""

    program: str
    kind: str  # "bug" or "clean"
    split: str  # "dev" or "held_out"
    bug_line: int | None
    checks: tuple[str, ...]  # the bug-kind checks that fired
    lines: tuple[int, ...]  # the lines those findings named in the program's own file
    steps_watched: int
    exit_code: int
    elapsed_s: float

    @property
    def found(self) -> bool:
        return bool(self.checks)

    @property
    def at_line(self) -> bool:
        """A finding names the bug's own line (within one line)."""
        return self.bug_line is not None and any(abs(line - self.bug_line) <= 1 for line in self.lines)


@dataclass(frozen=True)
class OutsideScore:
    """Recall, false alarms and line accuracy of one split (``dev``, ``held_out`` or ``all``)."""

    split: str
    bugs: int
    found: int
    found_at_line: int
    clean: int
    clean_with_findings: int
    did_not_step: int
    missed: tuple[str, ...]
    alarms: tuple[str, ...]

    @property
    def recall(self) -> float:
        return self.found / self.bugs if self.bugs else 0.0

    @property
    def at_line_share(self) -> float:
        """Of the bugs found, the share whose findings include the bug's own line."""
        return self.found_at_line / self.found if self.found else 0.0


# batch1: the manifest's top-level programs; batchN: its "batchN" field
BATCHES = (
    "batch1",
    "batch2",
    "batch3",
    "batch4",
    "batch5",
    "batch6",
    "batch7",
    "batch8",
    "batch9",
    "batch10",
    "batch11",
    "batch12",
    "batch13",
    "batch14",
    "batch15",
    "batch16",
    "batch17",
    "batch18",
    "batch19",
)


def load_manifest(path: Path, batch: str = "batch1") -> list[dict[str, Any]]:
    """The program entries (each with ``program``, ``kind``, ``split``, ``bug_line`` ...) of one batch: each
    batch was written and split on its own (``batch1`` seed 32, ``batch2`` seed 3202, ``batch3`` seed 3303,
    ``batch4`` seed 3404, ``batch5`` seed 3505, ``batch6`` seed 3606, ``batch7`` seed 3707, ``batch8`` seed 3808,
    ``batch9`` seed 3909, ``batch10`` seed 4010, ``batch11`` seed 4111, ``batch12`` seed 4112,
    ``batch13`` seed 4113, ``batch14`` seed 4114, ``batch15`` seed 4115,
    ``batch16`` seed 4116, ``batch17`` seed 4117, ``batch18`` seed 4118, ``batch19`` seed 4119)."""
    if batch not in BATCHES:
        raise ValueError(f"batch {batch!r} is not one of {BATCHES}")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    entries: list[dict[str, Any]] = manifest["programs"] if batch == "batch1" else manifest[batch]["programs"]
    return entries


def _outcome(entry: dict[str, Any], path: Path, result: DoctorResult) -> OutsideOutcome:
    bugs = [f for f in result.findings if f.kind == "bug"]
    own = str(path)
    return OutsideOutcome(
        program=entry["program"],
        kind=entry["kind"],
        split=entry["split"],
        bug_line=entry.get("bug_line"),
        checks=tuple(sorted({f.check for f in bugs})),
        lines=tuple(sorted({f.line for f in bugs if f.file == own and f.line is not None})),
        steps_watched=result.steps_watched,
        exit_code=result.exit_code,
        elapsed_s=result.elapsed_s,
    )


def run_outside(
    root: Path, entries: list[dict[str, Any]], *, workers: int = 2, watch_steps: int = 2, run_on: bool = False
) -> list[OutsideOutcome]:
    """Run each entry's program (``root / entry["program"]``) through doctor, stopped after ``watch_steps``
    optimizer steps (``run_on``: to its end, as a user runs it, with what doctor watches after the watch),
    ``workers`` at a time."""

    def one(entry: dict[str, Any]) -> OutsideOutcome:
        path = (root / entry["program"]).resolve()
        request = DoctorRequest(
            command=program_command(path),  # its doctor-command line (torchrun ...), else python PROGRAM
            watch_steps=watch_steps,
            stop_after_watch=not run_on,
            cwd=str(path.parent),
            stdout_to_stderr=True,
            max_wait_s=300.0,
        )
        return _outcome(entry, path, run_doctor(request))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, entries))


def score_split(outcomes: list[OutsideOutcome], split: str) -> OutsideScore:
    """Score the outcomes of one split (``all``: every outcome)."""
    chosen = [o for o in outcomes if split in ("all", o.split)]
    bugs = [o for o in chosen if o.kind == "bug"]
    clean = [o for o in chosen if o.kind == "clean"]
    return OutsideScore(
        split=split,
        bugs=len(bugs),
        found=sum(o.found for o in bugs),
        found_at_line=sum(o.found and o.at_line for o in bugs),
        clean=len(clean),
        clean_with_findings=sum(o.found for o in clean),
        did_not_step=sum(o.steps_watched == 0 for o in chosen),
        missed=tuple(o.program for o in bugs if not o.found),
        alarms=tuple(f"{o.program}: {','.join(o.checks)}" for o in clean if o.found),
    )
