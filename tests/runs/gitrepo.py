"""Small git work trees for the code-record tests (test_runs_codestate, test_runs_codecache, test_runs_review)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from expkit.runs.codestate import capture_code


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """``tmp_path/repo``: a git work tree on branch main with ``files`` committed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@t")
    git(repo, "config", "user.name", "t")
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    return repo


def age(*dirs: Path) -> None:
    """Every file and directory (git's too) modified 10 s ago: a later change gets a later mtime, as it
    does between a sweep's trials (the kernel's file clock ticks every few ms, faster than these steps)."""
    old = time.time_ns() - 10_000_000_000
    for d in dirs:
        for root, _dirs, files in os.walk(d):
            for path in [root, *(os.path.join(root, f) for f in files)]:
                os.utime(path, ns=(old, old))


def settled(repo: Path, **kwargs) -> object:
    """The kept record: git may rewrite its index during a capture (refreshing stat data), and a capture
    during which a watched path changed is not kept; the next one is."""
    for _ in range(3):
        first = capture_code(repo, **kwargs)
        if capture_code(repo, **kwargs) is first:
            return first
    raise AssertionError("the code record was never kept")
