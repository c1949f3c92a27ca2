"""execute() in worker threads: each run records its own working directory, and the caller's stays put.

Before the fix ``execute`` changed the process's directory (``os.chdir``) around the record capture,
so two concurrent calls in different folders recorded each other's folder and left the caller elsewhere.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from expkit.runs.execute import ExecRequest, execute
from expkit.runs.runrecord import RunRecord

PY = sys.executable
# prints the directory the child runs in, as a metric-free line, and one metrics line
CHILD = "import os, json; print(os.getcwd()); print(json.dumps({'step': 1, 'loss': 0.5}))"


@pytest.mark.slow
def test_concurrent_executes_record_their_own_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
        (folder / "input.txt").write_text(folder.name)
    caller = tmp_path / "caller"
    caller.mkdir()
    monkeypatch.chdir(caller)
    monkeypatch.delenv("EXPKIT_SEED", raising=False)
    store = tmp_path / "store"

    def run_in(folder: Path) -> tuple[Path, str]:
        res = execute(ExecRequest([PY, "-c", CHILD], store=store, cwd=folder, data=["input.txt"], seed=1))
        return folder, res.run_dir

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(run_in, folders * 20))
    assert len(done) == 40
    wrong: list[str] = []
    for folder, run_dir in done:
        path = Path(run_dir) / "run.json"
        record = RunRecord.from_json(orjson.loads(path.read_bytes()), path=path)
        printed = (Path(run_dir) / "output.log").read_text().splitlines()[0]
        data_path = record.data[0].path
        if record.cwd != str(folder) or printed != str(folder) or data_path != str(folder / "input.txt"):
            wrong.append(f"{folder.name}: cwd {record.cwd}, child {printed}, data {data_path}")
    assert not wrong, f"{len(wrong)} of 40 runs recorded another directory: {wrong[:4]}"
    assert Path.cwd() == caller and os.getcwd() == str(caller)
