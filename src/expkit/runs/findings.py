"""What ``expkit doctor`` found during a run, as ``runs show`` reads it back: ``doctor.json`` beside
``run.json``, written under ``runs exec`` by :mod:`expkit.doctor.record` (doctor sits above the run store, so
the store reads the file by its documented shape instead of importing doctor's types)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DOCTOR_RECORD", "RecordedFinding", "RecordedFindings", "read_recorded_findings"]

DOCTOR_RECORD = "doctor.json"  # expkit.doctor.record.RECORD_NAME
_MAX_BYTES = 16 * 2**20  # doctor writes a few KB; a larger file is not its record


@dataclass(frozen=True)
class RecordedFinding:
    """One finding as doctor recorded it (``expkit.doctor.findings.Finding.to_json``): ``kind`` is ``bug`` or
    ``performance``; ``file``/``line`` the user's line it points at (None when it had none); ``seen_file``/
    ``seen_line`` where the symptom showed when that differs (None otherwise, and in records written before)."""

    kind: str
    check: str
    message: str
    file: str | None
    line: int | None
    step: int
    fix: str
    seen_file: str | None = None
    seen_line: int | None = None


@dataclass(frozen=True)
class RecordedFindings:
    """A run's ``doctor.json``: who watched (``source``), how many optimizer steps, and the findings. ``problem``
    says why the file could not be read (then ``findings`` is empty)."""

    source: str
    steps_watched: int
    findings: tuple[RecordedFinding, ...]
    problem: str | None = None


def _finding(obj: Any) -> RecordedFinding:
    if not isinstance(obj, dict) or "check" not in obj or "message" not in obj:
        raise ValueError("a finding without check and message")
    line, seen_line = obj.get("line"), obj.get("seen_line")
    return RecordedFinding(
        kind=str(obj.get("kind") or "bug"),
        check=str(obj["check"]),
        message=str(obj["message"]),
        file=str(obj["file"]) if obj.get("file") else None,
        line=int(line) if isinstance(line, int) and not isinstance(line, bool) else None,
        step=int(obj.get("step") or 0),
        fix=str(obj.get("fix") or ""),
        seen_file=str(obj["seen_file"]) if obj.get("seen_file") else None,
        seen_line=int(seen_line) if isinstance(seen_line, int) and not isinstance(seen_line, bool) else None,
    )


def read_recorded_findings(run_dir: Path) -> RecordedFindings | None:
    """The findings doctor recorded in ``run_dir``, None when it has no ``doctor.json`` (doctor did not watch
    this run). A damaged file is reported in ``problem``, not raised: ``runs show`` still shows the run."""
    path = run_dir / DOCTOR_RECORD
    if not path.is_file():
        return None
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise ValueError(f"{path.stat().st_size:,} bytes, not a doctor record")
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or not isinstance(raw.get("findings"), list):
            raise ValueError("no findings list")
        findings = tuple(_finding(f) for f in raw["findings"])
        steps = raw.get("steps_watched")
        return RecordedFindings(
            source=str(raw.get("source") or "expkit doctor"),
            steps_watched=steps if isinstance(steps, int) and not isinstance(steps, bool) else 0,
            findings=findings,
        )
    # JSONDecodeError is a ValueError; OverflowError: int() of a step of 1e400 (inf); RecursionError: JSON
    # nested deeper than json's recursion limit
    except (OSError, UnicodeDecodeError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        return RecordedFindings(source="", steps_watched=0, findings=(), problem=f"{DOCTOR_RECORD} unreadable: {exc}")
