"""A checked operator that ends the process is a failed check (issue 36 item 2): ``expkit check op`` exited 0
with no output when the operator called ``os._exit(0)``, a pass for a CI gate. Now exit 1 with one line
saying the operator ended the process; at import time, exit 2 (the module is unusable, nothing was checked).

The family is generated: every way of ending the process (``os._exit``, ``sys.exit``, ``raise SystemExit``,
with codes 0, 1, 3 and a message) on either side (``fn`` or ``--reference``). Each case is a real
process: an ``os._exit`` in-process would end pytest itself where the fix is missing.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

EXITS = {
    "os_exit_0": "os._exit(0)",
    "os_exit_3": "os._exit(3)",
    "sys_exit_msg": "sys.exit('done')",
    "raise_1": "raise SystemExit(1)",
}
CASES = list(itertools.product(sorted(EXITS), ("fn", "reference")))


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ops")
    body = "".join(f"def {name}(x):\n    {call}\n\n\n" for name, call in EXITS.items())
    (root / "exiting_ops.py").write_text(f"import os\nimport sys\n\n\n{body}def ok(x):\n    return x * 2\n")
    for name, call in EXITS.items():
        (root / f"exits_on_import_{name}.py").write_text(
            f"import os\nimport sys\n\n{call}\n\n\ndef ok(x):\n    return x\n"
        )
    return root


def _check_op(ops: Path, fn: str, reference: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "expkit", "check", "op", fn, "-r", reference, "--shape", "4,8", *extra],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ops,
        env={"PYTHONPATH": str(ops), "PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(("name", "side"), CASES)
def test_an_operator_that_ends_the_process_is_a_failed_check(ops: Path, name: str, side: str) -> None:
    exiting, ok = f"exiting_ops:{name}", "exiting_ops:ok"
    res = _check_op(ops, *((exiting, ok) if side == "fn" else (ok, exiting)))
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr[-2000:])
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "ended the process" in lines[0] and exiting in lines[0], res.stderr[-2000:]
    assert ("os._exit" if name.startswith("os_") else "sys.exit") in lines[0]


@pytest.mark.parametrize("name", ["os_exit_0", "sys_exit_msg"])
def test_an_operator_module_that_exits_on_import_is_refused(ops: Path, name: str) -> None:
    res = _check_op(ops, f"exits_on_import_{name}:ok", "exiting_ops:ok", "--json")
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "while importing" not in res.stderr
    assert f"importing module 'exits_on_import_{name}' called" in res.stderr
