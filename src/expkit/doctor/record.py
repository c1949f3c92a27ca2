"""Findings in the run record: under ``expkit runs exec`` a program's environment names its run directory
(``EXPKIT_RUN_DIR``, set by :mod:`expkit.runs.execute`), and doctor writes ``doctor.json`` there beside
``run.json``. Nothing here imports torch or the run store: the bootstrap calls it in the watched process."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["ENV_RUN_DIR", "RECORD_NAME", "run_dir_from_environment", "write_run_record"]

ENV_RUN_DIR = "EXPKIT_RUN_DIR"  # the variable runs/execute.py gives a run's child
RECORD_NAME = "doctor.json"


def run_dir_from_environment(env: dict[str, str] | None = None) -> Path | None:
    """The run directory of the ``runs exec`` this process runs under, or None (not under one, or gone)."""
    value = (os.environ if env is None else env).get(ENV_RUN_DIR)
    return Path(value) if value and Path(value).is_dir() else None


def write_run_record(run_dir: Path, *, findings: Iterable[dict[str, Any]], steps_watched: int, source: str) -> Path:
    """Write ``run_dir/doctor.json`` atomically (temp file + rename) and return its path.

    Args:
        run_dir: the run's directory.
        findings: each finding as :meth:`expkit.doctor.findings.Finding.to_json` gives it.
        steps_watched: optimizer steps the checks watched.
        source: who watched (``expkit doctor``, ``watch()``, ``HF Trainer callback``, ``Lightning callback``).
    """
    path = run_dir / RECORD_NAME
    record = {"source": source, "steps_watched": steps_watched, "findings": list(findings)}
    tmp = path.with_name(f".{RECORD_NAME}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
