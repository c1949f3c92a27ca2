"""Sweep backends are a name table: a backend registered in a test is used by run_sweep and by
`expkit sweep --backend NAME` without a change to the CLI; unknown names list the table."""

from __future__ import annotations

import json
import sys
from collections.abc import Hashable

import pytest

from expkit.errors import UsageError
from expkit.sweep import BACKENDS, BackendSettings, SweepRequest, plan_sweep, run_sweep
from expkit.sweep.backends import AttemptOutcome, TrialJob, backend_names, make_backend, registered_backend


class InlineBackend:
    """Runs nothing: each submitted job 'finishes' at once with a loss computed from its config and seed,
    and the jobs are kept so the test can see what the driver handed over."""

    name = "inline"

    def __init__(self, settings: BackendSettings) -> None:
        self.max_parallel = settings.max_parallel or 3
        self.jobs: list[TrialJob] = []
        self.closed = False
        CREATED.append(self)

    def submit(self, job: TrialJob) -> Hashable:
        self.jobs.append(job)
        return len(self.jobs) - 1

    def wait(self, handles: list[Hashable], timeout_s: float) -> list[Hashable]:
        return list(handles)

    def outcome(self, handle: Hashable) -> AttemptOutcome:
        job = self.jobs[int(handle)]  # type: ignore[call-overload]
        loss = float(job.config["lr"]) * 10 + job.seed
        return AttemptOutcome("finished", None, None, 0, 0.0, {"loss": loss})

    def pid_of(self, handle: Hashable) -> int | None:
        return None

    def cancel(self, handles: list[Hashable]) -> None:
        return None

    def close(self) -> None:
        self.closed = True


CREATED: list[InlineBackend] = []


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    CREATED.clear()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EXPKIT_STORE", raising=False)


def test_the_built_in_backends_are_in_the_table() -> None:
    assert backend_names()[:3] == ("local", "ray", "slurm") and set(BACKENDS) >= {"local", "ray", "slurm"}


def test_a_registered_backend_runs_the_sweep(tmp_path) -> None:
    plan = plan_sweep(["never-run"], group="g", grid=["lr=0.1,0.2"], seeds=2)
    with registered_backend("inline", InlineBackend):
        res = run_sweep(SweepRequest(plan, store=tmp_path / "s", backend="inline", settings=BackendSettings(2)))
    assert "inline" not in BACKENDS  # the registration ended with the block
    (backend,) = CREATED
    assert backend.closed and backend.max_parallel == 2
    assert res.backend == "inline" and res.max_parallel == 2 and res.counts == {"finished": 4}
    # lr 0.2, seed 1: 0.2 * 10 + 1 = 3.0, as InlineBackend.outcome computes it from the job it was handed
    assert res.outcomes[3].final_metrics == {"loss": pytest.approx(3.0)}
    jobs = [(j.config["lr"], j.seed) for j in backend.jobs]  # round-robin by seed (SweepPlan.start_order)
    assert sorted(jobs) == [(0.1, 0), (0.1, 1), (0.2, 0), (0.2, 1)] and [s for _, s in jobs] == [0, 0, 1, 1]
    assert {j.extra_record["sweep"]["backend"] for j in backend.jobs} == {"inline"}


def test_the_cli_takes_a_backend_registered_after_it_was_imported(cli) -> None:
    import expkit.cli.sweep  # noqa: F401 - the CLI module is loaded before the backend exists

    with registered_backend("inline", InlineBackend):
        r = cli("sweep", "--backend", "inline", "--seeds", "2", "--grid", "lr=0.3", "--name", "c", "--json", "--", "x")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)["result"]
    assert res["backend"] == "inline" and res["counts"] == {"finished": 2}
    assert [o["final_metrics"]["loss"] for o in res["outcomes"]] == [pytest.approx(3.0), pytest.approx(4.0)]
    r = cli("sweep", "--backend", "inline", "--", sys.executable, "-c", "pass")
    assert r.exit_code == 2 and "backend 'inline' is not one of local, ray, slurm" in r.stderr


def test_an_unknown_backend_names_the_table() -> None:
    with pytest.raises(UsageError, match="backend 'pbs' is not one of local, ray, slurm"):
        make_backend("pbs", BackendSettings())
