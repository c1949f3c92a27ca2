"""The code record of a run: commit, branch, remote, and one patch holding staged, unstaged and
untracked text changes, so the exact tree can be rebuilt (``git apply``) months later.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PATCH_CAP_BYTES", "UNTRACKED_FILE_CAP_BYTES", "CodeRecord", "capture_code"]

# A patch past 10 MiB is a data file or a build dir that escaped .gitignore, not a code change.
PATCH_CAP_BYTES = 10 * 1024 * 1024
# An untracked file over 1 MiB is left out of the patch (and named in ``left_out``).
UNTRACKED_FILE_CAP_BYTES = 1024 * 1024
_GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class CodeRecord:
    """Where the code came from. ``commit`` is None outside a git work tree (``reason`` says why).

    ``patch`` is ``git diff HEAD --binary`` followed by new-file hunks for untracked text files; it is
    cut at ``patch_cap_bytes`` (``patch_truncated``) and files it could not hold are in ``left_out``.
    In ``run.json`` the patch text is None and lives in the file ``patch_file`` (``code.patch``).
    ``workdir`` is the directory the run started in, relative to ``toplevel``.
    """

    commit: str | None
    branch: str | None = None
    remote: str | None = None
    dirty: bool | None = None
    toplevel: str | None = None
    workdir: str | None = None
    patch: str | None = ""
    patch_bytes: int = 0
    patch_truncated: bool = False
    patch_cap_bytes: int = PATCH_CAP_BYTES
    changed_files: int = 0
    untracked_files: int = 0
    left_out: tuple[str, ...] = ()
    reason: str | None = None
    missing: dict[str, str] = field(default_factory=dict)
    patch_file: str | None = None


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=_GIT_TIMEOUT_S)


def _untracked_hunk(top: Path, rel: str) -> str | None:
    """A ``git apply``-able new-file diff for one untracked text file, or None for binary."""
    path = top / rel
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    mode = "100755" if os.stat(path).st_mode & stat.S_IXUSR else "100644"
    head = f"diff --git a/{rel} b/{rel}\nnew file mode {mode}\n"
    if not text:
        return head
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    body = "".join(f"+{line}\n" for line in lines)
    if not ends_with_newline:
        body += "\\ No newline at end of file\n"
    count = len(lines)
    return head + f"--- /dev/null\n+++ b/{rel}\n@@ -0,0 +1{',' + str(count) if count != 1 else ''} @@\n" + body


def _run_git_queries(top: Path) -> dict[str, bytes]:
    """HEAD, branch, remotes, untracked files and the diff against HEAD, the git calls run at once (with
    10,000 changed files ``status`` and ``diff`` each take ~0.5 s)."""
    procs = {
        name: subprocess.Popen(["git", *args], cwd=top, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for name, args in (
            ("head", ["rev-parse", "--verify", "-q", "HEAD"]),
            ("branch", ["symbolic-ref", "--short", "-q", "HEAD"]),
            ("remotes", ["config", "--get-regexp", r"^remote\..*\.url$"]),
            ("untracked", ["ls-files", "--others", "--exclude-standard", "-z"]),
            ("diff", ["diff", "HEAD", "--binary"]),
        )
    }
    return {name: p.communicate(timeout=_GIT_TIMEOUT_S)[0] for name, p in procs.items()}


def _remote_of(config_lines: str) -> str | None:
    """origin's URL, else the first remote's, from ``git config --get-regexp`` output; None without one."""
    urls = dict(line.split(" ", 1) for line in config_lines.split("\n") if " " in line)
    return urls.get("remote.origin.url") or next(iter(urls.values()), None)


def _untracked_files(top: Path, listing: bytes, exclude: tuple[str | Path, ...]) -> list[str]:
    """The untracked files (``ls-files -z`` output), less those under the ``exclude`` directories."""
    untracked = [u for u in listing.decode(errors="replace").split("\0") if u]
    excluded = []
    for ex in exclude:
        try:
            excluded.append(str(Path(ex).resolve().relative_to(top)).rstrip("/") + "/")
        except ValueError:
            continue
    return [u for u in untracked if not any(u.startswith(e) for e in excluded)]


@dataclass(frozen=True)
class _Patch:
    text: str
    size_bytes: int
    truncated: bool
    left_out: tuple[str, ...]


def _assemble_patch(top: Path, diff: str, untracked: list[str], cap_bytes: int) -> _Patch:
    """The tracked diff plus one new-file hunk per untracked file, up to ``cap_bytes``; files over
    UNTRACKED_FILE_CAP_BYTES, unreadable or binary ones, and whatever passes the cap are left out."""
    parts: list[str] = []
    size = 0
    truncated = False
    left_out: list[str] = []
    if diff:
        if len(diff.encode()) > cap_bytes:
            truncated = True
            left_out.append("(tracked changes: git diff HEAD is over the cap)")
        else:
            parts.append(diff)
            size += len(diff.encode())
    for rel in sorted(untracked):
        try:
            hunk = None if (top / rel).stat().st_size > UNTRACKED_FILE_CAP_BYTES else _untracked_hunk(top, rel)
        except OSError:
            hunk = None
        if hunk is None:
            left_out.append(rel)
            continue
        n = len(hunk.encode())
        if size + n > cap_bytes:
            truncated = True
            left_out.append(rel)
            continue
        parts.append(hunk)
        size += n
    return _Patch("".join(parts), size, truncated, tuple(left_out))


def capture_code(
    path: str | Path = ".",
    *,
    exclude: tuple[str | Path, ...] = (),
    patch_cap_bytes: int = PATCH_CAP_BYTES,
) -> CodeRecord:
    """Record the git state of the work tree holding ``path``.

    The record is kept per process and handed out again while nothing git would read for it changed (see
    ``expkit.runs.codecache``): ``expkit sweep`` records every trial's code, and six git processes a trial
    cost ~11 ms CPU here; a changed file, a commit or a new untracked file makes it read again.

    Args:
        path: a directory inside the work tree (the run's working directory).
        exclude: directories whose untracked files never enter the patch (the run store itself).
        patch_cap_bytes: the patch is cut here; the cut is recorded.

    Returns:
        A CodeRecord; outside a git work tree every field is None/empty and ``reason`` says so.

    Example:
        >>> capture_code(".").commit  # doctest: +SKIP
        '756b1c2f...'
    """
    from expkit.runs import codecache

    cwd = Path(path).resolve()
    key = (str(cwd), tuple(str(Path(e).resolve()) for e in exclude), patch_cap_bytes)
    kept = codecache.kept_record(key)
    if kept is not None:
        return kept
    started_ns = time.time_ns()
    record = _capture_code_now(cwd, exclude, patch_cap_bytes)
    codecache.keep_record(key, record, cwd=cwd, exclude=exclude, started_ns=started_ns)
    return record


def _capture_code_now(cwd: Path, exclude: tuple[str | Path, ...], patch_cap_bytes: int) -> CodeRecord:
    """``capture_code`` without the kept record: git asked now."""
    empty: dict[str, Any] = dict(
        branch=None,
        remote=None,
        dirty=None,
        toplevel=None,
        workdir=None,
        patch="",
        patch_bytes=0,
        patch_truncated=False,
        patch_cap_bytes=patch_cap_bytes,
        changed_files=0,
        untracked_files=0,
    )
    try:
        top_res = _git(["rev-parse", "--show-toplevel"], cwd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CodeRecord(commit=None, reason=f"git could not be run: {exc}", **empty)
    if top_res.returncode != 0:
        msg = top_res.stderr.decode(errors="replace").strip() or "not a git work tree"
        return CodeRecord(commit=None, reason=f"not inside a git work tree ({msg})", **empty)
    top = Path(top_res.stdout.decode().strip())
    out = _run_git_queries(top)
    commit = out["head"].decode().strip() or None
    branch = out["branch"].decode().strip() or None
    remote = _remote_of(out["remotes"].decode())
    missing = {
        field: why
        for field, value, why in (
            ("commit", commit, "the repository has no commit yet"),
            ("branch", branch, "detached HEAD"),
            ("remote", remote, "the repository has no remote"),
        )
        if value is None
    }
    # `git status` would hash every changed file a second time; the diff already names them
    diff = out["diff"].decode(errors="replace") if commit is not None else ""
    changed = diff.count("\ndiff --git ") + diff.startswith("diff --git ")
    untracked = _untracked_files(top, out["untracked"], exclude)
    patch = _assemble_patch(top, diff if changed else "", untracked, patch_cap_bytes)
    try:
        workdir = str(cwd.relative_to(top))
    except ValueError:
        workdir = None
    return CodeRecord(
        commit=commit,
        branch=branch,
        remote=remote,
        dirty=bool(changed or untracked),
        toplevel=str(top),
        workdir=workdir,
        patch=patch.text,
        patch_bytes=patch.size_bytes,
        patch_truncated=patch.truncated,
        patch_cap_bytes=patch_cap_bytes,
        changed_files=changed,
        untracked_files=len(untracked),
        left_out=patch.left_out,
        missing=missing,
    )
