"""The run store under its own faults (issue 15): each case a named regression test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
import pytest

from expkit.errors import InputError, UsageError
from expkit.runs import start
from expkit.runs import store as store_mod
from expkit.runs.execute import ExecRequest, execute
from expkit.runs.store import INDEX_NAME, find_run_dir, list_runs, resolve_store

PY = sys.executable


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for var in ("EXPKIT_SEED", "EXPKIT_RUN_DIR", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "runs"
    for i, name in enumerate(("a", "b", "c")):
        with start(config={"i": i}, seed=i, store=root, name=name) as run:
            run.log(1, loss=float(i))
    return root


def _ids(listing) -> set[str]:
    return {r.name for r in listing.runs}


@pytest.mark.parametrize("damage", ["truncated", "random"])
def test_corrupt_index_is_rebuilt_for_ls_show_and_exec(store: Path, damage: str) -> None:
    index = store / INDEX_NAME
    for suffix in ("-wal", "-shm"):
        (store / (INDEX_NAME + suffix)).unlink(missing_ok=True)
    if damage == "truncated":
        index.write_bytes(index.read_bytes()[:1500])
    else:
        index.write_bytes(os.urandom(8192))
    listing = list_runs(store)
    assert _ids(listing) == {"a", "b", "c"} and any("corrupt" in n and "rebuilt" in n for n in listing.notes)
    index.write_bytes(os.urandom(8192))
    with pytest.warns(RuntimeWarning, match="rebuilt"):
        assert find_run_dir(store, "b").is_dir()  # show-by-name goes through the index
    index.write_bytes(os.urandom(8192))
    with pytest.warns(RuntimeWarning):
        res = execute(ExecRequest([PY, "-c", 'print(\'{"step": 1, "loss": 0.5}\')'], store=store, seed=1))
    assert res.status == "finished"
    assert {r.status for r in list_runs(store).runs} == {"finished"}  # no lost run left behind


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2, 3]", "holds a JSON list, not an object"),
        (b'"just text"', "holds a JSON str"),
        (None, "field 'status' is a int"),
    ],
)
def test_bad_run_json_is_named_and_the_rest_listed(store: Path, content: bytes | None, message: str) -> None:
    bad = find_run_dir(store, "b") / "run.json"
    if content is None:
        rec = orjson.loads(bad.read_bytes())
        rec["status"] = 7
        content = orjson.dumps(rec)
    bad.write_bytes(content)
    listing = list_runs(store)
    assert _ids(listing) == {"a", "c"}
    (broken,) = listing.broken
    assert broken.id == bad.parent.name and message in broken.error


def test_deleted_run_json_does_not_list_as_finished(store: Path) -> None:
    list_runs(store)  # the index now holds b as finished
    run_dir = find_run_dir(store, "b")
    (run_dir / "run.json").unlink()
    listing = list_runs(store)
    assert _ids(listing) == {"a", "c"}
    assert [b.id for b in listing.broken] == [run_dir.name] and "missing" in listing.broken[0].error


def test_unreadable_run_dir_is_named(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod 000 on one run dir: root ignores permission bits, so os.stat raises PermissionError
    for that directory through a monkeypatch (what a non-root user sees)."""
    victim = find_run_dir(store, "a")
    (store / INDEX_NAME).unlink()  # force a re-read of every directory
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path).startswith(str(victim)):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(store_mod.os, "stat", stat)
    listing = list_runs(store)
    assert _ids(listing) == {"b", "c"} and "Permission denied" in listing.broken[0].error


def test_read_only_index_lists_from_the_directories(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only index (or store): root can write anyway, so sqlite's refusal is simulated."""
    import sqlite3

    real_connect = store_mod._connect

    def readonly(path):
        if path != ":memory:":
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real_connect(path)

    monkeypatch.setattr(store_mod, "_connect", readonly)
    listing = list_runs(store)
    assert _ids(listing) == {"a", "b", "c"} and any("in memory" in n for n in listing.notes)


def test_store_that_is_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text("x")
    with pytest.raises(UsageError, match="is a file, not a directory"):
        resolve_store(f)


def test_unlistable_store_is_one_error(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def scandir(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(store_mod.os, "scandir", scandir)
    with pytest.raises(InputError, match="cannot list the run store"):
        list_runs(store)
