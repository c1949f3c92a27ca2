"""The code record: commit, branch, and a patch that rebuilds the dirty tree with `git apply`."""

from __future__ import annotations

from pathlib import Path

from gitrepo import git, make_repo

from expkit.runs.codestate import capture_code


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path, {"train.py": "lr = 0.1\n", "staged.py": "a = 1\n"})
    git(repo, "remote", "add", "origin", "https://example.org/x.git")
    return repo


def test_patch_rebuilds_staged_unstaged_and_untracked(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "train.py").write_text("lr = 0.2\n")  # unstaged
    (repo / "staged.py").write_text("a = 2\n")
    git(repo, "add", "staged.py")  # staged
    (repo / "new_module.py").write_text("x = 1\ny = 2")  # untracked, no final newline
    (repo / "sub").mkdir()
    (repo / "sub" / "empty.txt").write_text("")
    (repo / "blob.bin").write_bytes(b"\0\1\2" * 10)  # untracked binary: left out, named
    (repo / "runs").mkdir()
    (repo / "runs" / "old.json").write_text("{}")  # the store: never in the patch
    rec = capture_code(repo, exclude=(repo / "runs",))
    assert rec.commit == git(repo, "rev-parse", "HEAD").strip() and rec.branch == "main"
    assert rec.remote == "https://example.org/x.git" and rec.dirty is True
    assert rec.changed_files == 2 and rec.untracked_files == 3 and rec.left_out == ("blob.bin",)
    assert "runs/old.json" not in rec.patch
    # rebuild in a clean worktree and compare every file
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "--detach", str(wt), rec.commit)
    patch = tmp_path / "p.patch"
    patch.write_text(rec.patch)
    git(wt, "apply", str(patch))
    for rel in ("train.py", "staged.py", "new_module.py", "sub/empty.txt"):
        assert (wt / rel).read_bytes() == (repo / rel).read_bytes(), rel


def test_cap_is_recorded_when_hit(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    for i in range(5):
        (repo / f"f{i}.txt").write_text("x" * 400 + "\n")
    rec = capture_code(repo, patch_cap_bytes=1000)
    assert rec.patch_truncated and rec.patch_cap_bytes == 1000 and rec.patch_bytes <= 1000
    assert len(rec.left_out) >= 3


def test_outside_a_repository_says_so(tmp_path: Path) -> None:
    rec = capture_code(tmp_path)
    assert rec.commit is None and "not inside a git work tree" in rec.reason and rec.patch == ""
