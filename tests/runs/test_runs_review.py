"""Review findings on the kept code record (codecache), the setpriv start (execute) and the kept index
connection (store): each test fails on the code before its fix."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from gitrepo import age, git, make_repo, settled

from expkit.runs import codecache
from expkit.runs.codestate import capture_code


def _repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path, {"train.py": "lr = 0.1\n"})


def test_kept_record_sees_an_edit_of_core_excludesfile(tmp_path: Path, counted, monkeypatch) -> None:
    """core.excludesFile may name any file: unignoring a file there makes it untracked, as git sees it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    (home / "my-ignore").write_text("secret.py\n")
    (home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'my-ignore'}\n")
    repo = _repo(tmp_path)
    (repo / "secret.py").write_text("key = 1\n")
    age(repo, home)
    assert settled(repo).untracked_files == 0  # type: ignore[attr-defined]
    (home / "my-ignore").write_text("")
    assert capture_code(repo).untracked_files == 1


def test_kept_record_sees_an_edit_of_git_config_global(tmp_path: Path, counted, monkeypatch) -> None:
    """GIT_CONFIG_GLOBAL names the global config git reads instead of ~/.gitconfig: it is watched too."""
    cfg = tmp_path / "global.cfg"
    (tmp_path / "ign").write_text("secret.py\n")
    cfg.write_text(f"[core]\n\texcludesFile = {tmp_path / 'ign'}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    repo = _repo(tmp_path)
    (repo / "secret.py").write_text("key = 1\n")
    age(tmp_path)
    assert settled(repo).untracked_files == 0  # type: ignore[attr-defined]
    cfg.write_text("")
    assert capture_code(repo).untracked_files == 1


def test_kept_record_sees_an_edit_of_info_attributes(tmp_path: Path, counted) -> None:
    """$GIT_DIR/info/attributes changes what git diff prints (here: -diff makes the change 'binary')."""
    repo = _repo(tmp_path)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("*.py -diff\n")
    (repo / "train.py").write_text("lr = 0.3\n")
    age(repo)
    assert "+lr = 0.3" not in (settled(repo).patch or "")  # type: ignore[attr-defined]
    (repo / ".git" / "info" / "attributes").write_text("")
    assert "+lr = 0.3" in (capture_code(repo).patch or "")


@pytest.mark.skipif(not os.path.exists("/usr/bin/setpriv"), reason="the setpriv start needs setpriv")
@pytest.mark.parametrize("first_line", ["#!/nonexistent/interpreter\n", "echo ran-through-sh\n"])
def test_a_program_the_kernel_cannot_exec_is_refused_as_before(tmp_path: Path, first_line: str) -> None:
    """An executable file the kernel cannot exec (a missing interpreter; no #! line at all) raised Popen's
    OSError naming it; through setpriv it became a 'failed' run (setpriv's exit 127), or, without a #! line,
    ran through /bin/sh (setpriv's execvp falls back to it, Popen does not)."""
    from expkit.errors import UsageError
    from expkit.runs import execute as ex

    script = tmp_path / "job.sh"
    script.write_text(first_line)
    script.chmod(0o755)
    with pytest.raises(UsageError, match=r"job\.sh"):
        ex.execute(ex.ExecRequest(("./job.sh",), store=tmp_path / "runs", cwd=tmp_path))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def _forked_child_ends(lock, work, what: str) -> None:
    """Fork while ``lock`` is held (as another thread of a multiprocessing parent would hold it); the child runs
    ``work``, which takes the lock: it must end, not hang on the copy it inherited."""
    with lock:
        pid = os.fork()
        if pid == 0:  # the child: the lock it inherited is held by a thread that does not exist here
            try:
                work()
            finally:
                os._exit(0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError(f"the forked child hung on the inherited {what} lock")


def test_a_forked_child_indexes_while_a_thread_held_the_store_lock(tmp_path: Path) -> None:
    from expkit.runs import store

    _forked_child_ends(store._KEPT_LOCK, lambda: store._kept_index(tmp_path / "runs"), "store")


def test_a_forked_child_keeps_code_records_while_a_thread_held_the_cache_lock() -> None:
    _forked_child_ends(codecache._LOCK, codecache.forget_kept_records, "code-record cache")


def test_a_repo_whose_config_includes_another_file_is_not_kept(tmp_path: Path, counted, monkeypatch) -> None:
    """[include] path = FILE: git reads FILE too, which is not watched, so the record is taken every time (an
    excludesFile set in the included file and then dropped makes a file untracked)."""
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    repo = _repo(tmp_path)
    (tmp_path / "ign").write_text("secret.py\n")
    extra = tmp_path / "extra.gitconfig"
    extra.write_text(f"[core]\n\texcludesFile = {tmp_path / 'ign'}\n")
    git(repo, "config", "include.path", str(extra))
    (repo / "secret.py").write_text("key = 1\n")
    age(tmp_path)
    assert [capture_code(repo).untracked_files for _ in range(3)] == [0, 0, 0]
    assert len(counted) == 3  # git was asked every time (a kept record is reused from the third capture on)
    extra.write_text("")
    assert capture_code(repo).untracked_files == 1


def test_config_given_in_the_environment_is_part_of_the_key(tmp_path: Path, counted, monkeypatch) -> None:
    """GIT_CONFIG_COUNT/KEY_n/VALUE_n set config without a file: an excludesFile given that way, then dropped."""
    repo = _repo(tmp_path)
    (tmp_path / "ign").write_text("secret.py\n")
    (repo / "secret.py").write_text("key = 1\n")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.excludesFile")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(tmp_path / "ign"))
    age(tmp_path)
    assert settled(repo).untracked_files == 0  # type: ignore[attr-defined]
    monkeypatch.setenv("GIT_CONFIG_COUNT", "0")
    assert capture_code(repo).untracked_files == 1
