"""Export runs for teams: into an MLflow tracking server (params, metrics with steps, tags, artifacts)
and into TensorBoard event files (metrics). Both are idempotent: MLflow skips a run it holds, the
TensorBoard directory of a run is rewritten. The MLflow URI is checked before anything is sent (a
server that does not answer within MLFLOW_CONNECT_TIMEOUT_S is one line and exit 2, not minutes of
retries).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import MissingDependency, UsageError
from expkit.runs.metrics import iter_metric_records, metric_value
from expkit.runs.store import find_run_dir, list_runs, read_record, resolve_store

__all__ = [
    "MLFLOW_CONNECT_TIMEOUT_S",
    "ExportedRun",
    "check_mlflow_uri",
    "export_mlflow",
    "export_tensorboard",
    "iter_metric_points",
]

# A tracking server on the LAN answers a TCP connect in milliseconds; 3 s allows a slow VPN.
MLFLOW_CONNECT_TIMEOUT_S = 3.0
_DB_SCHEMES = ("postgresql", "mysql", "mssql")

# MLflow's REST limits per log_batch call (mlflow docs, "log_batch"): 1000 metrics, 100 params, 100 tags.
_BATCH_METRICS, _BATCH_PARAMS = 1000, 100
_PARAM_VALUE_CHARS = 6000
_MLFLOW_STATUS = {
    "finished": "FINISHED",
    "failed": "FAILED",
    "killed": "KILLED",
    "stopped": "KILLED",  # stopped early by expkit sweep --early-stop (MLflow has no such status)
    "lost": "FAILED",
    "running": "RUNNING",
}


@dataclass(frozen=True)
class ExportedRun:
    """One exported run: where it went and how much of it."""

    run_id: str
    target: str
    target_run_id: str | None
    metric_points: int
    params: int
    artifacts: tuple[str, ...]
    skipped: str | None = None


@dataclass(frozen=True)
class ExportBatch:
    """Every run exported by one ``runs export``, MLflow first, then TensorBoard. Its JSON is the list."""

    exported: tuple[ExportedRun, ...]

    def __json__(self) -> list[ExportedRun]:
        return list(self.exported)


def export_runs(
    ids: list[str] | tuple[str, ...] = (),
    *,
    store: str | os.PathLike[str] | None = None,
    mlflow_uri: str | None = None,
    tensorboard_dir: str | os.PathLike[str] | None = None,
    experiment: str = "expkit",
) -> ExportBatch:
    """Export runs (default: all) to an MLflow tracking server and/or TensorBoard event files.

    Raises:
        UsageError: neither ``mlflow_uri`` nor ``tensorboard_dir`` given; see export_mlflow for the rest.
    """
    if not mlflow_uri and not tensorboard_dir:
        raise UsageError("nothing to export to", hint="give an MLflow tracking URI and/or a TensorBoard directory")
    done: tuple[ExportedRun, ...] = ()
    if mlflow_uri:
        done += export_mlflow(mlflow_uri, ids, store=store, experiment=experiment)
    if tensorboard_dir:
        done += export_tensorboard(tensorboard_dir, ids, store=store)
    return ExportBatch(done)


def iter_metric_points(run_dir: Path):
    """Yield (step, unix_time, name, value) for every numeric value of ``metrics.jsonl`` and other ranks'
    files; a value of rank R > 0 is named ``NAME.rankR`` (NaN and inf kept as floats)."""
    for path, rec in iter_metric_records(run_dir):
        suffix = path.stem.replace("metrics", "")  # "" or ".rank1"
        step, t = rec.get("step"), rec.get("time")
        rank = rec.get("rank")
        tag = f".rank{rank}" if type(rank) is int and rank != 0 else suffix
        for k, v in rec.items():
            if k in ("step", "time", "rank"):
                continue
            num = metric_value(v)
            if num is not None:
                yield step, t, f"{k}{tag}", float(num)


def check_mlflow_uri(uri: str) -> str:
    """``uri`` if MLflow can take it here, checked without MLflow's retries.

    http(s): a TCP connect within MLFLOW_CONNECT_TIMEOUT_S. ``sqlite:///PATH``: the directory exists and
    the database can be written. ``file://`` and plain paths: refused (MLflow 3's file store refuses new
    data), with the sqlite URI to use instead.

    Raises:
        UsageError: an unknown scheme, an unreachable server, an unwritable database, a file store.
    """
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme in ("http", "https"):
        host, port = parsed.hostname, parsed.port or (443 if scheme == "https" else 80)
        if not host:
            raise UsageError(f"MLflow URI {uri!r} has no host", hint="e.g. http://127.0.0.1:5000")
        try:
            socket.create_connection((host, port), timeout=MLFLOW_CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise UsageError(
                f"MLflow server {host}:{port} is not reachable ({exc.strerror or exc})",
                hint="start it (mlflow server --port 5000) or check the URI",
            ) from None
        return uri
    if scheme == "sqlite":
        db = uri[len("sqlite:///") :] if uri.startswith("sqlite:///") else ""
        if not db or db == ":memory:":
            raise UsageError(f"MLflow URI {uri!r} names no database file", hint="e.g. sqlite:///mlflow.db")
        path = Path(db)
        if not path.parent.is_dir():
            raise UsageError(f"the directory of {uri!r} does not exist", hint=f"mkdir -p {path.parent}")
        import sqlite3

        try:
            con = sqlite3.connect(path, timeout=1.0)
            con.execute("BEGIN IMMEDIATE")
            con.execute("ROLLBACK")
            con.close()
        except sqlite3.Error as exc:
            raise UsageError(
                f"the MLflow database {path} cannot be written ({exc})",
                hint="choose a writable place for the sqlite file",
            ) from None
        return uri
    if scheme in _DB_SCHEMES or scheme.startswith(tuple(s + "+" for s in _DB_SCHEMES)) or scheme == "databricks":
        return uri
    if scheme in ("", "file") or (len(scheme) == 1 and uri[1:3] in (":\\", ":/")):
        where = parsed.path if scheme == "file" else uri
        raise UsageError(
            f"MLflow URI {uri!r} is a file store, which the installed MLflow no longer writes",
            hint=f"use a database file instead: sqlite:///{Path(where).absolute()}/mlflow.db",
        )
    raise UsageError(
        f"MLflow URI scheme {scheme!r} is not supported",
        hint="use http://HOST:PORT, https://..., sqlite:///PATH.db or a database URI",
    )


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: obj}


def _selected(root: Path, ids: list[str] | tuple[str, ...]) -> list[Path]:
    if ids:
        return [find_run_dir(root, i) for i in ids]
    return [root / r.id for r in list_runs(root).runs]


def export_mlflow(
    uri: str,
    ids: list[str] | tuple[str, ...] = (),
    *,
    store: str | os.PathLike[str] | None = None,
    experiment: str = "expkit",
) -> tuple[ExportedRun, ...]:
    """Log runs into the MLflow tracking server at ``uri`` (all runs of the store when ``ids`` is empty).

    Each run becomes an MLflow run with params (the flattened config), metrics with their steps and
    times, tags (``expkit.run_id``, ``git.commit``, ``git.dirty``, ``seed``, ``expkit.status``) and
    artifacts (``config.json``, ``code.patch``, ``environment.json``, ``output.log``). A run exported
    before (same ``expkit.run_id`` tag) is skipped.

    Raises:
        MissingDependency: mlflow is not installed.
        UsageError: the URI is refused by ``check_mlflow_uri`` (before any run is sent).
    """
    check_mlflow_uri(uri)
    # a server that dies mid-export fails in seconds instead of MLflow's default minutes of retries
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    try:
        from mlflow import MlflowClient
        from mlflow.entities import Metric, Param
    except ImportError:
        raise MissingDependency("mlflow is not installed", hint="pip install 'expkit[mlflow]'") from None
    root = resolve_store(store)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    artifacts_at = None
    if uri.startswith("sqlite:///"):  # MLflow would put artifacts in ./mlruns of whatever directory this runs in
        artifacts_at = (Path(uri[len("sqlite:///") :]).absolute().parent / "mlartifacts" / experiment).as_uri()
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment, artifact_location=artifacts_at)
    out = []
    for run_dir in _selected(root, ids):
        rec = read_record(run_dir)
        found = client.search_runs([exp_id], filter_string=f"tags.`expkit.run_id` = '{rec.id}'")
        if found:
            out.append(ExportedRun(rec.id, uri, found[0].info.run_id, 0, 0, (), skipped="exported before"))
            continue
        code, seed = rec.code, rec.seed
        tags = {
            "expkit.run_id": rec.id,
            "expkit.status": rec.status,
            "git.commit": getattr(code, "commit", None),
            "git.branch": getattr(code, "branch", None),
            "git.dirty": getattr(code, "dirty", None),
            "seed": getattr(seed, "seed", None),
            "mlflow.source.git.commit": getattr(code, "commit", None),
            "expkit.kind": rec.kind,
            "expkit.command": " ".join(rec.command)[:5000],
            "expkit.diverged": rec.diverged_at if rec.diverged else None,
            "expkit.integration": rec.integration,
        }
        created_ms = int((rec.created_unix or 0) * 1000) or None
        mrun = client.create_run(
            exp_id,
            start_time=created_ms,
            run_name=rec.name or rec.id,
            tags={k: str(v) for k, v in tags.items() if v is not None},
        )
        mid = mrun.info.run_id
        params = [Param(k[:250], str(v)[:_PARAM_VALUE_CHARS]) for k, v in _flatten(rec.config).items() if k]
        for i in range(0, len(params), _BATCH_PARAMS):
            client.log_batch(mid, params=params[i : i + _BATCH_PARAMS])
        points = [
            Metric(name, value, int((t or 0) * 1000), int(step or 0))
            for step, t, name, value in iter_metric_points(run_dir)
        ]
        for i in range(0, len(points), _BATCH_METRICS):
            client.log_batch(mid, metrics=points[i : i + _BATCH_METRICS])
        client.set_tag(mid, "expkit.metric_points", str(len(points)))
        arts = []
        with tempfile.TemporaryDirectory() as tmp:
            env_path = Path(tmp) / "environment.json"
            env_path.write_bytes(orjson.dumps(rec.to_json()["environment"], option=orjson.OPT_INDENT_2))
            rec_path = Path(tmp) / "run.json"
            rec_path.write_bytes(orjson.dumps(rec.to_json(), option=orjson.OPT_INDENT_2))
            for f in (run_dir / "config.json", run_dir / "code.patch", run_dir / "output.log", env_path, rec_path):
                if f.exists():
                    client.log_artifact(mid, str(f))
                    arts.append(f.name)
        status = _MLFLOW_STATUS.get(rec.status, "FAILED")
        ended = rec.ended_at
        end_ms = None
        if ended:
            from datetime import datetime

            end_ms = int(datetime.fromisoformat(ended).timestamp() * 1000)
        if status != "RUNNING":
            client.set_terminated(mid, status=status, end_time=end_ms)
        out.append(ExportedRun(rec.id, uri, mid, len(points), len(params), tuple(arts)))
    return tuple(out)


def export_tensorboard(
    out_dir: str | os.PathLike[str],
    ids: list[str] | tuple[str, ...] = (),
    *,
    store: str | os.PathLike[str] | None = None,
) -> tuple[ExportedRun, ...]:
    """Write TensorBoard event files, one subdirectory per run (``OUT/<run id>/``), scalars by step.

    Exporting again replaces the run's event files (TensorBoard would otherwise show every point twice).

    Raises:
        MissingDependency: tensorboard is not installed.
    """
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise MissingDependency("tensorboard is not installed", hint="pip install 'expkit[tensorboard]'") from None
    root = resolve_store(store)
    out = []
    for run_dir in _selected(root, ids):
        rec = read_record(run_dir)
        target = Path(out_dir) / rec.id
        if target.is_dir():
            for old in target.glob("events.out.tfevents.*"):
                old.unlink()
        writer = SummaryWriter(log_dir=str(target))
        n = 0
        for step, t, name, value in iter_metric_points(run_dir):
            writer.add_scalar(name, value, global_step=step, walltime=t)
            n += 1
        writer.close()
        out.append(ExportedRun(rec.id, str(target), None, n, 0, ()))
    return tuple(out)
