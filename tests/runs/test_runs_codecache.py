"""The code record is kept per process while nothing git reads for it changed (a sweep's trials share one
tree's record instead of six git processes a trial), and taken anew after an edit, a new file, a commit,
or a ``git init`` above a directory that was outside any work tree."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from expkit.runs import codecache
from expkit.runs.codestate import capture_code


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _age(repo: Path) -> None:
    """Every file and directory (git's too) modified 10 s ago: a later change gets a later mtime, as it
    does between a sweep's trials (the kernel's file clock ticks every few ms, faster than these steps)."""
    old = time.time_ns() - 10_000_000_000
    for root, _dirs, files in os.walk(repo):
        for path in [root, *(os.path.join(root, f) for f in files)]:
            os.utime(path, ns=(old, old))


def _settled(repo: Path, **kwargs) -> object:
    """The kept record: git may rewrite its index during a capture (refreshing stat data), and a capture
    during which a watched path changed is not kept; the next one is."""
    for _ in range(3):
        first = capture_code(repo, **kwargs)
        if capture_code(repo, **kwargs) is first:
            return first
    raise AssertionError("the code record was never kept")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@t")
    _git(repo, "config", "user.name", "t")
    (repo / "train.py").write_text("lr = 0.1\n")
    (repo / ".gitignore").write_text("out/\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    return repo


def test_kept_until_an_edit_of_the_same_size(tmp_path: Path, counted) -> None:
    repo = _repo(tmp_path)
    (repo / "out").mkdir()
    (repo / "runs").mkdir()
    _age(repo)
    first = _settled(repo, exclude=(repo / "runs",))
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
    _age(repo)
    _settled(repo)
    n = len(counted)
    (repo / "new.py").write_text("x = 1\n")
    rec = capture_code(repo)
    assert len(counted) == n + 1 and rec.untracked_files == 1
    _age(repo)
    _settled(repo)
    n = len(counted)
    _git(repo, "add", "new.py")
    _git(repo, "commit", "-qm", "two")
    rec = capture_code(repo)
    assert len(counted) == n + 1 and not rec.dirty and rec.commit == _git(repo, "rev-parse", "HEAD").strip()


def test_outside_a_work_tree_kept_until_git_init(tmp_path: Path, counted) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    _age(plain)
    assert capture_code(plain).commit is None and capture_code(plain).commit is None and len(counted) == 1
    _git(plain, "init", "-q")
    assert capture_code(plain).toplevel == str(plain.resolve()) and len(counted) == 2


def test_not_kept_while_a_file_changed_just_before_the_capture(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(codecache, "_KEPT", {})
    monkeypatch.setattr(codecache, "RACY_NS", 300_000_000)
    repo = _repo(tmp_path)
    (repo / "train.py").write_text("lr = 0.2\n")  # now: within RACY_NS of the capture
    first = capture_code(repo)
    assert capture_code(repo) is not first
    time.sleep(0.35)
    settled = _settled(repo)
    assert "+lr = 0.2" in (settled.patch or "")  # type: ignore[attr-defined]
