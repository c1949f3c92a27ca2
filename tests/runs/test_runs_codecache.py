"""The code record is kept per process while nothing git reads for it changed (a sweep's trials share one
tree's record instead of six git processes a trial), and taken anew after an edit, a new file, a commit,
or a ``git init`` above a directory that was outside any work tree."""

from __future__ import annotations

import time
from pathlib import Path

from gitrepo import age, git, make_repo, settled

from expkit.runs import codecache
from expkit.runs.codestate import capture_code


def _repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path, {"train.py": "lr = 0.1\n", ".gitignore": "out/\n"})


def test_kept_until_an_edit_of_the_same_size(tmp_path: Path, counted) -> None:
    repo = _repo(tmp_path)
    (repo / "out").mkdir()
    (repo / "runs").mkdir()
    age(repo)
    first = settled(repo, exclude=(repo / "runs",))
    n = len(counted)
    (repo / "out" / "ckpt.bin").write_bytes(b"x")  # ignored: not watched
    (repo / "runs" / "r1").mkdir()  # the store: excluded
    (repo / "runs" / "r1" / "run.json").write_text("{}")
    assert capture_code(repo, exclude=(repo / "runs",)) is first and len(counted) == n
    (repo / "train.py").write_text("lr = 0.3\n")  # same size, same inode
    edited = capture_code(repo, exclude=(repo / "runs",))
    assert len(counted) == n + 1 and edited.dirty and "+lr = 0.3" in (edited.patch or "")


def test_taken_again_after_a_new_untracked_file_and_a_commit(tmp_path: Path, counted) -> None:
    repo = _repo(tmp_path)
    age(repo)
    settled(repo)
    n = len(counted)
    (repo / "new.py").write_text("x = 1\n")
    rec = capture_code(repo)
    assert len(counted) == n + 1 and rec.untracked_files == 1
    age(repo)
    settled(repo)
    n = len(counted)
    git(repo, "add", "new.py")
    git(repo, "commit", "-qm", "two")
    rec = capture_code(repo)
    assert len(counted) == n + 1 and not rec.dirty and rec.commit == git(repo, "rev-parse", "HEAD").strip()


def test_outside_a_work_tree_kept_until_git_init(tmp_path: Path, counted) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    age(plain)
    assert capture_code(plain).commit is None and capture_code(plain).commit is None and len(counted) == 1
    git(plain, "init", "-q")
    assert capture_code(plain).toplevel == str(plain.resolve()) and len(counted) == 2


def test_not_kept_while_a_file_changed_just_before_the_capture(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(codecache, "_KEPT", {})
    monkeypatch.setattr(codecache, "RACY_NS", 300_000_000)
    repo = _repo(tmp_path)
    (repo / "train.py").write_text("lr = 0.2\n")  # now: within RACY_NS of the capture
    first = capture_code(repo)
    assert capture_code(repo) is not first
    time.sleep(0.35)
    kept = settled(repo)
    assert "+lr = 0.2" in (kept.patch or "")  # type: ignore[attr-defined]
