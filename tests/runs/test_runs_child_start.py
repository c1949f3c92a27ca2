"""How ``execute`` starts a command: the kernel's parent-death signal is set (a SIGKILLed sweep leaves no
orphan), through ``setpriv`` where it exists (no ``preexec_fn``, so Popen may vfork: a fork of a Ray worker
cost 20 ms a trial), with the ``preexec_fn`` kept where it does not or the program does not resolve."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from expkit.errors import UsageError
from expkit.runs import execute as ex

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# The command reports its own parent-death signal (prctl PR_GET_PDEATHSIG = 2) and pid.
REPORT = (
    "import ctypes, json, os\n"
    "v = ctypes.c_int(0)\n"
    "ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0)\n"
    'print(json.dumps({"step": 1, "pdeathsig": v.value, "pid": os.getpid()}))\n'
)


@linux
@pytest.mark.parametrize("with_setpriv", [True, False])
def test_the_command_gets_sigkill_as_its_parent_death_signal(tmp_path: Path, monkeypatch, with_setpriv) -> None:
    if with_setpriv and ex._setpriv() is None:
        pytest.skip("setpriv (util-linux >= 2.33) is not installed here")
    if not with_setpriv:
        monkeypatch.setattr(ex, "_setpriv", lambda: None)
    pids = []
    res = ex.execute(ex.ExecRequest((sys.executable, "-c", REPORT), store=tmp_path / "runs"), on_start=pids.append)
    assert res.status == "finished"
    assert res.final_metrics["pdeathsig"] == 9  # SIGKILL; 0 when nothing set it
    assert res.final_metrics["pid"] == pids[0]  # setpriv execs the command in its own process


@linux
def test_setpriv_only_for_a_program_that_resolves(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ex, "_setpriv", lambda: "/usr/bin/setpriv")
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    start = ex.child_start([sys.executable, "-c", "pass"], tmp_path, env)
    assert start.argv[:4] == ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--"] and start.preexec_fn is None
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\n")
    assert ex.child_start(["./train.sh"], tmp_path, env).preexec_fn is not None  # not executable
    script.chmod(0o755)
    assert ex.child_start(["./train.sh"], tmp_path, env).argv[-1] == "./train.sh"
    missing = ex.child_start(["no-such-program-xyz"], tmp_path, env)
    assert missing.argv == ["no-such-program-xyz"] and missing.preexec_fn is not None


@linux
def test_a_relative_path_entry_is_looked_up_from_the_commands_directory(tmp_path: Path, monkeypatch) -> None:
    """The child searches PATH from its own directory (Popen's cwd), so the choice of setpriv must too: a
    program in ``<cwd>/bin`` with ``PATH=bin:...`` resolves, wherever the driver itself runs."""
    monkeypatch.setattr(ex, "_setpriv", lambda: "/usr/bin/setpriv")
    workdir, elsewhere = tmp_path / "work", tmp_path / "driver"
    (workdir / "bin").mkdir(parents=True)
    elsewhere.mkdir()
    prog = workdir / "bin" / "train-xyz"
    prog.write_text('#!/bin/sh\necho \'{"step": 1, "ok": 1}\'\n')
    prog.chmod(0o755)
    monkeypatch.chdir(elsewhere)
    env = {"PATH": "bin" + os.pathsep + os.environ.get("PATH", os.defpath)}
    assert ex.child_start(["train-xyz"], workdir, env).argv[-1] == "train-xyz"
    assert ex.child_start(["train-xyz"], workdir, env).preexec_fn is None
    monkeypatch.setenv("PATH", env["PATH"])
    res = ex.execute(ex.ExecRequest(("train-xyz",), store=tmp_path / "runs", cwd=str(workdir)))
    assert res.status == "finished" and res.final_metrics["ok"] == 1


def test_a_program_that_does_not_exist_is_still_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="could not start 'no-such-program-xyz'"):
        ex.execute(ex.ExecRequest(("no-such-program-xyz",), store=tmp_path / "runs"))
