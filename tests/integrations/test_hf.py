"""ExpkitCallback with a real Hugging Face Trainer: a tiny GPT-2 built here, a few CPU steps, then
the run read back through runs show / diff / export --mlflow (issue 14, item 2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from hftiny import tiny_trainer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from expkit.cli.app import app  # noqa: E402
from expkit.integrations.hf import ExpkitCallback  # noqa: E402
from expkit.runs.store import read_record  # noqa: E402

runner = CliRunner()
pytestmark = pytest.mark.slow  # two real Trainer runs: ~25 s on 2 cores


def _train(tmp: Path, store: Path, *, lr: float, name: str, steps: int = 4) -> ExpkitCallback:
    cb = ExpkitCallback(store=store, name=name, config={"purpose": "test"})
    tiny_trainer(tmp / name, callbacks=[cb], steps=steps, lr=lr, save_steps=2, save_strategy="steps", seed=7).train()
    return cb


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ExpkitCallback, ExpkitCallback]:
    tmp = tmp_path_factory.mktemp("hf")
    store = tmp / "runs"
    a = _train(tmp, store, lr=1e-3, name="hf-a")
    b = _train(tmp, store, lr=1e30, name="hf-b")  # diverges: the loss goes NaN
    return store, a, b


def test_the_trainer_run_is_complete(trained) -> None:
    _, a, _ = trained
    rec = read_record(a.run.dir)
    assert rec.status == "finished" and rec.integration == "hf-trainer" and not rec.diverged
    assert rec.config["training_args"]["learning_rate"] == 1e-3 and rec.config["purpose"] == "test"
    assert rec.config["model_config"]["id2label"] == {"0": "NEG", "1": "POS"}
    assert any("'model_config.id2label'" in n and "stored as the string '0'" in n for n in rec.config_notes)
    assert rec.seed.seed == 7 and rec.seed.seeded == () and "Trainer" in rec.seed.not_seeded["all"]
    steps = [
        json.loads(line)["step"]
        for line in (a.run.dir / "metrics.jsonl").read_text().splitlines()
        if "loss" in json.loads(line)
    ]
    assert steps == [1, 2, 3, 4]  # every logged loss at its global step
    assert [c.name for c in rec.checkpoints] == ["checkpoint-2", "checkpoint-4"]
    assert "model.safetensors" in rec.checkpoints[0].files and rec.checkpoints[0].step == 2
    assert isinstance(rec.final_metrics["loss"], float) and rec.final_metrics["step"] == 4


def test_a_nan_loss_marks_the_run_diverged(trained) -> None:
    _, _, b = trained
    rec = read_record(b.run.dir)
    assert rec.status == "finished" and rec.diverged and "=nan" in rec.diverged_at  # grad_norm goes first
    # the Trainer's logging_nan_inf_filter (default on) hides the NaN loss; grad_norm shows it, and the record says so
    assert rec.final_metrics["grad_norm"] == "nan"  # visible in run.json, not dropped
    assert any("logging_nan_inf_filter" in n for n in rec.config_notes)


def test_show_diff_and_mlflow_export_handle_trainer_runs(trained, tmp_path: Path) -> None:
    store, _, _ = trained
    show = runner.invoke(app, ["runs", "show", "hf-b", "--store", str(store)])
    assert show.exit_code == 0, show.output
    assert "DIVERGED" in show.output and "grad_norm=nan" in show.output and "hf-trainer" in show.output
    diff = runner.invoke(app, ["runs", "diff", "hf-a", "hf-b", "--store", str(store), "--json"])
    assert diff.exit_code == 0, diff.output
    keys = {(d["category"], d["key"]) for d in json.loads(diff.stdout)["result"]["differences"]}
    assert ("config", "training_args.learning_rate") in keys and ("metrics", "diverged") in keys
    pytest.importorskip("mlflow")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = runner.invoke(app, ["runs", "export", "hf-a", "hf-b", "--store", str(store), "--mlflow", uri, "--json"])
    assert (tmp_path / "mlartifacts").is_dir()  # artifacts beside the database, not in ./mlruns
    assert res.exit_code == 0, res.output
    exported = json.loads(res.stdout)["result"]
    assert all(e["metric_points"] >= 8 and e["params"] > 50 for e in exported)
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    hist = client.get_metric_history(exported[1]["target_run_id"], "grad_norm")
    assert [m.step for m in hist] == [1, 2, 3, 4] and math.isnan(hist[-1].value)  # NaN reaches MLflow
    assert client.get_run(exported[1]["target_run_id"]).data.tags["expkit.diverged"].endswith("grad_norm=nan")


def test_evaluate_after_train_lands_in_the_same_run(tmp_path: Path) -> None:
    # issue 21 item 1: the run closed at on_train_end and a later trainer.evaluate() went nowhere, silently
    cb = ExpkitCallback(store=tmp_path / "runs", name="late-eval")
    trainer = tiny_trainer(tmp_path / "out", callbacks=[cb], steps=3, eval_rows=8)
    trainer.train()
    assert read_record(cb.run.dir).status == "finished"  # settled at the end of training
    trainer.evaluate()
    cb.run.finish()
    logged = [json.loads(line) for line in (cb.run.dir / "metrics.jsonl").read_text().splitlines()]
    # every value of the Trainer's own log history is in the record, at its step
    for entry in trainer.state.log_history:
        step = entry["step"]
        for key, value in entry.items():
            if key in ("step", "epoch") or not isinstance(value, int | float):
                continue
            assert any(r["step"] == step and r.get(key) == pytest.approx(value) for r in logged), (key, step)
    assert "eval_loss" in trainer.state.log_history[-1]
    rec = read_record(cb.run.dir)
    assert rec.status == "finished" and rec.final_metrics["eval_loss"] == pytest.approx(
        trainer.state.log_history[-1]["eval_loss"]
    )
