"""Export to a real MLflow tracking server (SQLite backend, 127.0.0.1) and to TensorBoard files."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from expkit.runs import start
from expkit.runs.export import export_mlflow, export_tensorboard


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path: Path, mlflow_sqlite_db: Path):
    port = _free_port()
    mlflow_exe = Path(sys.executable).with_name("mlflow")
    log = open(tmp_path / "mlflow-server.log", "wb")  # noqa: SIM115 - the server outlives this block
    proc = subprocess.Popen(
        [
            str(mlflow_exe),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{mlflow_sqlite_db}",
            "--artifacts-destination",
            str(tmp_path / "mlartifacts"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=tmp_path,
        # mlflow >= 3.5 starts a job runner and seven huey consumers beside the server unless told not to; the
        # export uses none of them: 145 s -> 50 s to /health on this 2-core machine at load 21
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"mlflow server exited: {(tmp_path / 'mlflow-server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("mlflow server not ready after 120 s")
            time.sleep(0.5)
        yield uri
    finally:
        # SIGKILL: nothing is checked after the test, and a graceful uvicorn shutdown took 9-10 s at load 20-30
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()


def _two_runs(store: Path) -> list[str]:
    ids = []
    with start(config={"lr": 0.1, "model": {"layers": 2}}, seed=3, store=store, name="good") as run:
        for step in range(5):
            run.log(step, loss=1.0 / (step + 1))
        ids.append(run.id)
    with pytest.raises(RuntimeError), start(config={"lr": 0.2}, seed=4, store=store, name="bad") as run:
        run.log(0, loss=9.0)
        raise RuntimeError("diverged")
    ids.append(run.id)
    return ids


@pytest.mark.slow
def test_export_to_a_real_mlflow_server(tmp_path: Path, mlflow_server: str) -> None:
    from mlflow import MlflowClient

    good, bad = _two_runs(tmp_path / "s")
    out = export_mlflow(mlflow_server, store=tmp_path / "s", experiment="t")
    assert {e.run_id for e in out} == {good, bad} and all(e.skipped is None for e in out)
    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("t")
    (mg,) = client.search_runs([exp.experiment_id], filter_string=f"tags.`expkit.run_id` = '{good}'")
    assert mg.data.params == {"lr": "0.1", "model.layers": "2"}
    assert mg.data.tags["seed"] == "3" and mg.info.status == "FINISHED" and mg.data.tags["expkit.status"] == "finished"
    assert len(mg.data.tags["git.commit"]) == 40  # the tests run inside the expkit checkout
    history = client.get_metric_history(mg.info.run_id, "loss")
    assert [(m.step, m.value) for m in history] == [(s, 1.0 / (s + 1)) for s in range(5)]
    arts = {a.path for a in client.list_artifacts(mg.info.run_id)}
    assert {"config.json", "environment.json", "run.json"} <= arts
    (mb,) = client.search_runs([exp.experiment_id], filter_string=f"tags.`expkit.run_id` = '{bad}'")
    assert mb.info.status == "FAILED"
    again = export_mlflow(mlflow_server, [good], store=tmp_path / "s", experiment="t")
    assert again[0].skipped == "exported before"


def test_export_to_tensorboard(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    good, _ = _two_runs(tmp_path / "s")
    export_tensorboard(tmp_path / "tb", [good], store=tmp_path / "s")
    acc = EventAccumulator(str(tmp_path / "tb" / good))
    acc.Reload()
    events = acc.Scalars("loss")
    assert [(e.step, round(e.value, 6)) for e in events] == [(s, round(1.0 / (s + 1), 6)) for s in range(5)]
