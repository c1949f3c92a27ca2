"""Shared test fixtures: run the CLI in-process and get exit code, stdout and stderr apart."""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

# The Hugging Face Hub cannot be reached here: every test runs offline, as CI does.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
# pytest-xdist's workers (`make test` runs two) get COLUMNS=80 and LINES=24 from execnet; a serial run has neither,
# so the CLI renders for a pipe. Drop them in a worker so both runs render the same.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

import pytest
from hypothesis import HealthCheck, settings

# The suite must pass on a busy machine (load 10): hypothesis's wall-clock guards (a 200 ms deadline per example,
# the "input generation is slow" health check) measure the machine, not the code. A fresh clone's CI run at load
# failed tests/perf/test_buckets.py::test_interval_algebra on too_slow (1.04 s for 3 inputs). Examples and their
# count stay hypothesis's defaults.
settings.register_profile("busy-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("busy-machine")

# A suite started as a background job of a non-interactive shell (`make test &`, nohup) inherits SIGINT
# ignored, and so would every process it starts: the Ctrl-C tests would then see commands that cannot be
# interrupted. A Python handler here is reset to the default at exec, so the commands under test get the
# SIGINT a terminal gives them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None


@pytest.fixture
def cli():
    """``cli("stats", "ci", "--n", "80", ...)`` -> CliResult (in-process, like a user at a shell)."""
    from typer.testing import CliRunner

    from expkit.cli.app import app

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> CliResult:
        res = runner.invoke(app, list(args), input=input)
        exc = res.exception if not isinstance(res.exception, SystemExit) else None
        return CliResult(res.exit_code, res.stdout, res.stderr, exc)

    return invoke


# One local Ray instance for the tests that take `local_ray` (the Ray backend's and the worker-kill fault
# test), started by the first of them and stopped after the last, so no later test finds Ray running in this
# process (RayBackend uses an instance it finds and would not look at an --address). Starting one costs
# ~11 s on an idle 2-core machine and ~9 CPU-s: seven Python processes (autoscaler monitor, API server, log
# monitor, dashboard and runtime-env agents, two workers) import ray at ~1.4 s each; measured here, neither
# RAY_USAGE_STATS_ENABLED=0, RAY_AUTH_MODE=disabled nor enable_worker_prestart=False changed that. Ray gives
# its raylet a fixed 30 s to register (ray/_private/node.py, raylet_start_wait_time_s), which a machine
# loaded 5x over can miss once, so a failed start is tried again; only a Ray that fails twice is skipped.
RAY_START_ATTEMPTS = 2


def _start_local_ray():
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        return ray
    failures = []
    for _ in range(RAY_START_ATTEMPTS):
        t0 = time.monotonic()
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            return ray
        except Exception as exc:  # noqa: BLE001 - ray raises Exception itself when its node times out starting
            ray.shutdown()
            failures.append(f"{time.monotonic() - t0:.0f} s: {type(exc).__name__}: {str(exc)[:200]}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    pytest.skip(f"a local Ray instance did not start in {RAY_START_ATTEMPTS} tries (load {load}): {failures}")


@pytest.fixture
def local_ray():
    """The ``ray`` module with a local instance of 2 CPUs running (shared; stopped after its last user)."""
    return _start_local_ray()


def pytest_runtest_teardown(item, nextitem):
    if "local_ray" not in getattr(item, "fixturenames", ()):
        return
    rest = item.session.items[item.session.items.index(item) + 1 :] if nextitem is not None else []
    ray = sys.modules.get("ray")  # None where ray is not installed (the fixture skipped)
    if ray is not None and not any("local_ray" in getattr(i, "fixturenames", ()) for i in rest):
        ray.shutdown()


@pytest.fixture(scope="session")
def _mlflow_db_template(tmp_path_factory):
    """An MLflow SQLite database with mlflow's tables made, once per session. Making them runs mlflow's
    alembic migrations: 15 s of a test at load 30 (measured here with mlflow 3.17), paid once instead of by
    every export test."""
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()  # the client makes the tables
    return path


@pytest.fixture
def mlflow_sqlite_db(tmp_path, _mlflow_db_template):
    """A new MLflow database file for one test (``tmp_path/mlflow.db``), a copy of the session's template:
    the tables are mlflow's own, the runs and experiments are this test's. tests/cli/test_runs_cli.py still
    exports to a file MLflow has to create."""
    import shutil

    return shutil.copyfile(_mlflow_db_template, tmp_path / "mlflow.db")
