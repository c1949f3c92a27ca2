"""The code record kept per process while nothing git reads for it changed: a stat fingerprint (mtime,
size, inode, mode) of every file and directory of the work tree that git does not ignore, and of git's own
HEAD, refs, index and config, compared before each reuse. A sweep's trials share the record of one tree
instead of asking git six times a trial; an edit, a commit or a new untracked file is seen, as git sees it
(git's own status check is this stat comparison).

Not kept (taken anew each time): a tree with submodules (their state is not in these files), one past
MAX_WATCHED_PATHS (stat-ing it costs about what git does), a capture during which a watched path changed
(within RACY_NS of its start), a repo whose git config has includes or whose refs are a reftable (git reads
files there that are not watched), and a record taken where git could not be run. The key holds every GIT_*
variable, HOME, XDG_CONFIG_HOME and PATH. Locks are new in a forked child.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import Any

__all__ = ["MAX_WATCHED_PATHS", "RACY_NS", "forget_kept_records", "keep_record", "kept_record"]

MAX_WATCHED_PATHS = 20_000
# A path modified less than this before the capture started may have changed while git read it; mtimes
# are ns fields but the kernel sets them from a clock ticking every few ms, and FAT/exFAT store them rounded
# down to 2 s: 3 s is past all of these (not past a network filesystem whose clock lags by more).
RACY_NS = 3_000_000_000
# The environment that changes what git finds or reads (a key of the kept record): every GIT_* variable
# (GIT_DIR, GIT_CONFIG_GLOBAL, GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT/KEY_n/VALUE_n ...) and these.
GIT_ENV = ("HOME", "XDG_CONFIG_HOME", "PATH")
_GIT_TIMEOUT_S = 60

Stat = tuple[int, int, int, int] | None
_KEPT: dict[Hashable, tuple[tuple[str, ...], tuple[Stat, ...], Any]] = {}
_LOCK = threading.Lock()


def _new_lock_in_child() -> None:
    """A fork while another thread held ``_LOCK`` (multiprocessing from the threaded sweep driver) would leave
    the child's copy held forever: the child starts with a fresh one."""
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)

KEPT_RECORDS = 8  # (directory, excluded dirs, cap) combinations kept per process


def _stat(path: str) -> Stat:
    try:
        st = os.lstat(path)  # git records a symlink as a link, not its target
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)


def forget_kept_records() -> None:
    """Drop every kept record: the next capture asks git (what a fresh process pays; benchmarks of one run's
    start that repeat it in one process call this between repeats)."""
    with _LOCK:
        _KEPT.clear()


def _full_key(key: Hashable) -> Hashable:
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_") or k in GIT_ENV)
    return (key, tuple(env))


def kept_record(key: Hashable) -> Any | None:
    """The record kept under ``key`` if no watched path changed since it was taken, else None."""
    with _LOCK:
        hit = _KEPT.get(_full_key(key))
    if hit is None:
        return None
    paths, fingerprint, record = hit
    if tuple(_stat(p) for p in paths) != fingerprint:
        return None
    return record


def keep_record(key: Hashable, record: Any, *, cwd: Path, exclude: tuple[str | Path, ...], started_ns: int) -> None:
    """Keep ``record`` (a CodeRecord taken in ``cwd`` from ``started_ns`` on) under ``key`` with the fingerprint
    of what it depends on; nothing is kept where that cannot be watched (see the module docstring)."""
    paths = _watched_paths(record, cwd, exclude)
    full = _full_key(key)
    with _LOCK:
        _KEPT.pop(full, None)
    if paths is None:
        return
    fingerprint = tuple(_stat(p) for p in paths)
    if any(st is not None and st[0] >= started_ns - RACY_NS for st in fingerprint):
        return
    with _LOCK:
        _KEPT[full] = (paths, fingerprint, record)
        while len(_KEPT) > KEPT_RECORDS:
            _KEPT.pop(next(iter(_KEPT)))


# the ignore and attributes files a config names, and its includes (which make the record uncacheable)
_NAMED_IN_CONFIG = r"^(core\.(excludesfile|attributesfile)|include(if)?\..*)$"


def _global_git_files() -> list[str]:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [
        os.path.join(home, ".gitconfig"),
        os.path.join(xdg, "git", "config"),
        os.path.join(xdg, "git", "ignore"),
        os.path.join(xdg, "git", "attributes"),
        "/etc/gitconfig",
        # the config files git reads instead where these are set (GIT_ENV keys the record on them)
        *(os.environ[k] for k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM") if os.environ.get(k)),
    ]


def _watched_paths(record: Any, cwd: Path, exclude: tuple[str | Path, ...]) -> tuple[str, ...] | None:
    """The paths whose stat decides whether ``record`` still holds, or None when it cannot be kept."""
    if record.toplevel is None:
        if record.reason is None or not record.reason.startswith("not inside a git work tree"):
            return None  # git could not be run: try again next time
        # outside a work tree: a .git appearing in this directory or above would change that
        return tuple(str(d / ".git") for d in (cwd, *cwd.parents)) + tuple(_global_git_files())
    top = Path(record.toplevel)
    if (top / ".gitmodules").exists():
        return None
    try:
        dirs = subprocess.run(
            ["git", "rev-parse", "--git-dir", "--git-common-dir"],
            cwd=top,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
        )
        ignored = subprocess.run(
            ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"],
            cwd=top,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
        )
        # the ignore and attributes files named in the config (any path): they change what git lists and diffs
        named = subprocess.run(
            ["git", "config", "-z", "--path", "--get-regexp", _NAMED_IN_CONFIG],
            cwd=top,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if dirs.returncode != 0 or ignored.returncode != 0 or named.returncode not in (0, 1):
        return None
    git_dir, common_dir = (top / d for d in dirs.stdout.decode().split("\n")[:2])
    entries = [e for e in named.stdout.decode(errors="replace").split("\0") if "\n" in e]
    if (common_dir / "reftable").is_dir() or any(e.startswith("include") for e in entries):
        return None  # reftable refs and included config files are not watched here: take the record each time
    watched = [str(git_dir / n) for n in ("HEAD", "index", "info/exclude", "info/attributes")]
    watched += [str(common_dir / n) for n in ("config", "packed-refs", "info/exclude", "info/attributes")]
    watched += [str(top / e.split("\n", 1)[1]) for e in entries]
    if record.branch:
        watched.append(str(common_dir / "refs" / "heads" / record.branch))
    watched += _global_git_files()
    skip = {str(top / p.rstrip("/")) for p in ignored.stdout.decode(errors="replace").split("\0") if p}
    skip |= {str(Path(e).resolve()) for e in exclude}
    skip |= {str(git_dir), str(common_dir), str(top / ".git")}
    for root, subdirs, files in os.walk(top):
        watched.append(root)
        subdirs[:] = [d for d in subdirs if os.path.join(root, d) not in skip]
        watched += [p for p in (os.path.join(root, f) for f in files) if p not in skip]
        if len(watched) > MAX_WATCHED_PATHS:
            return None
    return tuple(watched)
