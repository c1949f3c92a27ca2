"""Export runs for teams: into an MLflow tracking server (params, metrics with steps, tags, artifacts)
and into TensorBoard event files (metrics).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import MissingDependency
from expkit.runs.store import find_run_dir, list_runs, read_run, resolve_store

__all__ = ["ExportedRun", "export_mlflow", "export_tensorboard", "iter_metric_points"]

# MLflow's REST limits per log_batch call (mlflow docs, "log_batch"): 1000 metrics, 100 params, 100 tags.
_BATCH_METRICS, _BATCH_PARAMS = 1000, 100
_PARAM_VALUE_CHARS = 6000
_MLFLOW_STATUS = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED", "lost": "FAILED",
                  "running": "RUNNING"}


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


def iter_metric_points(run_dir: Path):
    """Yield (step, unix_time, name, value) for every numeric value of ``metrics.jsonl`` (and other ranks')."""
    for path in sorted(run_dir.glob("metrics*.jsonl")):
        suffix = path.stem.replace("metrics", "")  # "" or ".rank1"
        for line in path.read_bytes().splitlines():
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            step, t = rec.get("step"), rec.get("time")
            for k, v in rec.items():
                if k in ("step", "time"):
                    continue
                if isinstance(v, str) and v in ("nan", "inf", "-inf"):
                    v = float(v)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    yield step, t, f"{k}{suffix}", float(v)


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


def export_mlflow(uri: str, ids: list[str] | tuple[str, ...] = (), *, store: str | os.PathLike[str] | None = None,
                  experiment: str = "expkit") -> tuple[ExportedRun, ...]:
    """Log runs into the MLflow tracking server at ``uri`` (all runs of the store when ``ids`` is empty).

    Each run becomes an MLflow run with params (the flattened config), metrics with their steps and
    times, tags (``expkit.run_id``, ``git.commit``, ``git.dirty``, ``seed``, ``expkit.status``) and
    artifacts (``config.json``, ``code.patch``, ``environment.json``, ``output.log``). A run exported
    before (same ``expkit.run_id`` tag) is skipped.

    Raises:
        MissingDependency: mlflow is not installed.
    """
    try:
        from mlflow import MlflowClient
        from mlflow.entities import Metric, Param, RunTag
    except ImportError:
        raise MissingDependency("mlflow is not installed", hint="pip install 'expkit[mlflow]'") from None
    root = resolve_store(store)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    out = []
    for run_dir in _selected(root, ids):
        rec = read_run(run_dir)
        found = client.search_runs([exp_id], filter_string=f"tags.`expkit.run_id` = '{rec['id']}'")
        if found:
            out.append(ExportedRun(rec["id"], uri, found[0].info.run_id, 0, 0, (), skipped="exported before"))
            continue
        code, seed = rec.get("code") or {}, rec.get("seed") or {}
        tags = {"expkit.run_id": rec["id"], "expkit.status": rec.get("status"), "git.commit": code.get("commit"),
                "git.branch": code.get("branch"), "git.dirty": code.get("dirty"), "seed": seed.get("seed"),
                "mlflow.source.git.commit": code.get("commit"), "expkit.kind": rec.get("kind"),
                "expkit.command": " ".join(rec.get("command") or [])[:5000]}
        created_ms = int((rec.get("created_unix") or 0) * 1000) or None
        mrun = client.create_run(exp_id, start_time=created_ms, run_name=rec.get("name") or rec["id"],
                                 tags={k: str(v) for k, v in tags.items() if v is not None})
        mid = mrun.info.run_id
        params = [Param(k[:250], str(v)[:_PARAM_VALUE_CHARS]) for k, v in _flatten(rec.get("config") or {}).items() if k]
        for i in range(0, len(params), _BATCH_PARAMS):
            client.log_batch(mid, params=params[i:i + _BATCH_PARAMS])
        points = [Metric(name, value, int((t or 0) * 1000), int(step or 0))
                  for step, t, name, value in iter_metric_points(run_dir)]
        for i in range(0, len(points), _BATCH_METRICS):
            client.log_batch(mid, metrics=points[i:i + _BATCH_METRICS])
        client.set_tag(mid, "expkit.metric_points", str(len(points)))
        arts = []
        with tempfile.TemporaryDirectory() as tmp:
            env_path = Path(tmp) / "environment.json"
            env_path.write_bytes(orjson.dumps(rec.get("environment"), option=orjson.OPT_INDENT_2))
            rec_path = Path(tmp) / "run.json"
            rec_path.write_bytes(orjson.dumps(rec, option=orjson.OPT_INDENT_2))
            for f in (run_dir / "config.json", run_dir / "code.patch", run_dir / "output.log", env_path, rec_path):
                if f.exists():
                    client.log_artifact(mid, str(f))
                    arts.append(f.name)
        status = _MLFLOW_STATUS.get(rec.get("status") or "", "FAILED")
        ended = rec.get("ended_at")
        end_ms = None
        if ended:
            from datetime import datetime

            end_ms = int(datetime.fromisoformat(ended).timestamp() * 1000)
        if status != "RUNNING":
            client.set_terminated(mid, status=status, end_time=end_ms)
        out.append(ExportedRun(rec["id"], uri, mid, len(points), len(params), tuple(arts)))
    return tuple(out)


def export_tensorboard(out_dir: str | os.PathLike[str], ids: list[str] | tuple[str, ...] = (), *,
                       store: str | os.PathLike[str] | None = None) -> tuple[ExportedRun, ...]:
    """Write TensorBoard event files, one subdirectory per run (``OUT/<run id>/``), scalars by step.

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
        rec = read_run(run_dir)
        target = Path(out_dir) / rec["id"]
        writer = SummaryWriter(log_dir=str(target))
        n = 0
        for step, t, name, value in iter_metric_points(run_dir):
            writer.add_scalar(name, value, global_step=step, walltime=t)
            n += 1
        writer.close()
        out.append(ExportedRun(rec["id"], str(target), None, n, 0, ()))
    return tuple(out)
