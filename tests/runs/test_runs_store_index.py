"""Index rows are written through one kept connection per store and process (opening one cost ~1 ms CPU and
~2 ms wall, twice a sweep trial); a replaced, deleted or overwritten index file is opened again."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from expkit.runs import store
from expkit.runs.runrecord import RunRecord


def _write(root: Path, run_id: str) -> None:
    (root / run_id).mkdir(parents=True, exist_ok=True)
    store.write_record(root, RunRecord(id=run_id, status="finished"))


def _indexed(root: Path) -> set[str]:
    con = sqlite3.connect(root / store.INDEX_NAME)
    try:
        return {r[0] for r in con.execute("SELECT id FROM runs")}
    finally:
        con.close()


@pytest.fixture
def counted_connects(monkeypatch):
    calls: list[object] = []
    real = sqlite3.connect

    def connect(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(store.sqlite3, "connect", connect)
    return calls


def test_one_connection_for_many_writes(tmp_path: Path, counted_connects) -> None:
    root = tmp_path / "runs"
    for i in range(5):
        _write(root, f"r{i}")
    assert len(counted_connects) == 2  # open_index once (create, check), then the kept connection: not 5 x 1
    assert _indexed(root) == {f"r{i}" for i in range(5)}


def test_a_store_deleted_and_made_again_is_indexed_again(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _write(root, "a")
    shutil.rmtree(root)
    _write(root, "b")
    assert _indexed(root) == {"b"}


def test_an_index_overwritten_in_place_still_lists_every_run(tmp_path: Path) -> None:
    """The kept connection may go on writing into its own (now unlinked) WAL: rows lost there are a cache's
    loss, and the listing reconciles the index with the run directories (rebuilding the corrupt file)."""
    root = tmp_path / "runs"
    _write(root, "a")
    with open(root / store.INDEX_NAME, "r+b") as f:  # same inode, not a database any more
        f.write(b"garbage" * 1000)
    for suffix in ("-wal", "-shm"):
        (root / (store.INDEX_NAME + suffix)).unlink(missing_ok=True)
    _write(root, "b")
    listing = store.list_runs(root)
    assert {r.id for r in listing.runs} == {"a", "b"}
    assert any("corrupt" in note for note in listing.notes)
