"""Store properties: names never escape, configs round-trip, a silent remote run turns lost."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.errors import UsageError
from expkit.runs.run import validate_config
from expkit.runs.store import HEARTBEAT_STALE_S, list_runs, read_run, resolve_store, validate_name, write_run

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6))
def test_json_configs_pass_unchanged(cfg: dict) -> None:
    assert validate_config(cfg) == cfg


@given(st.text(max_size=40))
@settings(max_examples=300)
def test_accepted_names_stay_inside_the_store(name: str) -> None:
    try:
        validate_name(name)
    except UsageError:
        return
    root = Path("/store").resolve()
    assert (root / name).resolve().parent == root and name not in (".", "..") and "/" not in name


def test_silent_run_from_another_host_becomes_lost(tmp_path: Path) -> None:
    run_dir = tmp_path / "20250101-000000-abcdef"
    run_dir.mkdir()
    rec = {
        "id": run_dir.name,
        "status": "running",
        "pid": 1,
        "pid_create_time": 0.0,
        "hardware": {"hostname": "other-node-17"},
        "created_unix": time.time() - 3600,
    }
    write_run(tmp_path, rec)
    beat = run_dir / "heartbeat"
    beat.touch()
    assert list_runs(tmp_path).runs[0].status == "running"  # fresh heartbeat: trusted
    old = time.time() - HEARTBEAT_STALE_S - 5
    os.utime(beat, (old, old))
    (row,) = list_runs(tmp_path).runs
    assert row.status == "lost" and "other-node-17" in row.status_reason
    assert read_run(run_dir)["status"] == "lost"


def test_store_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EXPKIT_STORE", raising=False)
    assert resolve_store() == tmp_path / "runs"
    monkeypatch.setenv("EXPKIT_STORE", str(tmp_path / "env"))
    assert resolve_store() == tmp_path / "env"
    assert resolve_store(tmp_path / "arg") == tmp_path / "arg"
