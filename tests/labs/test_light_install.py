"""The light install (``pip install expkit``, no extras) runs ``labs run`` over the whole registry: the labs it
can run give their verdicts, every other one is ``needs expkit[...]``; none fails, none prints a traceback, and
none judges a claim from a package that is missing (issue 21: C1.4 said "not reproduced" because its probe
script died on ``import torch``).

A sitecustomize hides every optional package of ``errors.EXTRA_OF_PACKAGE`` from a real ``expkit`` process, as
a core-only venv has them (checked by hand on 2026-12-02 with ``python3 -m venv /tmp/corevenv &&
/tmp/corevenv/bin/pip install -e .``: the same 4 labs ran and 32 were ``needs``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from expkit.errors import EXTRA_OF_PACKAGE

# The labs that need no extra: their tools are the light core's (data, stats, multiprocessing). A new lab
# without torch belongs here; a lab that leaves this set now needs an extra its users do not have.
TORCH_FREE_LABS = {"C1.1", "C1.2", "C1.3", "C2.2"}

_HIDE = f"""\
import sys
_HIDDEN = {tuple(sorted(EXTRA_OF_PACKAGE))!r}
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, _Hide())
"""


@pytest.mark.slow  # the four torch-free labs run for real: ~2 min on 2 loaded cores, ~30 s idle
def test_every_lab_runs_or_says_which_extra_it_needs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(_HIDE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    hidden = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert hidden.returncode == 1 and "No module named 'torch'" in hidden.stderr  # the hook works
    out = tmp_path / "report"
    res = subprocess.run(
        [sys.executable, "-m", "expkit", "labs", "run", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    results = {r["id"]: r for r in json.loads((out / "results.json").read_text())["results"]}
    from expkit.labs.registry import all_labs

    assert set(results) == {entry.id for entry in all_labs()}  # the whole registry
    ran = {lab_id for lab_id, r in results.items() if r["status"] == "ok"}
    assert ran == TORCH_FREE_LABS
    extras = set(EXTRA_OF_PACKAGE.values()) | {"all"}
    for lab_id, r in results.items():
        if lab_id in ran:
            assert r["measurements"], lab_id
            continue
        assert r["status"] == "needs", (lab_id, r["status"], (r.get("error") or "")[-1500:])
        assert not r["measurements"], lab_id  # no verdict from a missing package
        needed = r["explanation"].removeprefix("not run: needs expkit[").split("]")[0]
        assert needed in extras, (lab_id, r["explanation"])
        assert f"{lab_id:<8} not run: needs expkit[{needed}]" in res.stdout


@pytest.mark.parametrize("lab_id", ["C1.4", "C2.3", "C6.5"])
def test_a_lab_whose_probe_needs_torch_is_needs_not_a_verdict(lab_id: str, tmp_path: Path, monkeypatch) -> None:
    # C1.4 runs a torch script and reads its traceback; C2.3 and C6.5 train in sweep trials (child processes):
    # without torch the first judged an ImportError's traceback ("not reproduced"), the others failed
    from expkit.labs.registry import select_labs
    from expkit.labs.runner import run_lab

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ModuleNotFoundError, name 'torch'
    (entry,) = select_labs([lab_id])
    result = run_lab(entry, out_dir=tmp_path, quick=True)
    assert result.status == "needs" and not result.measurements
    assert result.explanation.startswith("not run: needs expkit[torch]")
