"""ExpkitLogger with a real Lightning Trainer on the CPU, then runs show / diff / export --mlflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("lightning")
torch = pytest.importorskip("torch")

import lightning as L  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from expkit.cli.app import app  # noqa: E402
from expkit.integrations.lightning import ExpkitLogger  # noqa: E402
from expkit.runs.store import read_record  # noqa: E402

runner = CliRunner()
pytestmark = pytest.mark.slow  # two real Lightning fits: ~25 s on 2 cores


class Tiny(L.LightningModule):
    def __init__(self, lr: float, id2label: dict | None = None) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):  # noqa: ANN001 - Lightning's API
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def _fit(tmp: Path, store: Path, *, lr: float, name: str) -> ExpkitLogger:
    L.seed_everything(3, verbose=False)
    x = torch.randn(32, 4)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
    logger = ExpkitLogger(store=store, name=name)
    trainer = L.Trainer(
        max_epochs=2,
        logger=logger,
        log_every_n_steps=1,
        accelerator="cpu",
        devices=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp / name),
    )
    trainer.fit(Tiny(lr, id2label={0: "a"}), loader)
    return logger


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("pl")
    store = tmp / "runs"
    return store, _fit(tmp, store, lr=0.01, name="pl-a"), _fit(tmp, store, lr=1e30, name="pl-b")


def test_the_lightning_run_is_complete(fitted) -> None:
    _, a, _ = fitted
    rec = read_record(a.experiment.dir)
    assert rec.status == "finished" and rec.integration == "lightning" and not rec.diverged
    assert rec.config["hparams"]["lr"] == 0.01 and rec.config["hparams"]["id2label"] == {"0": "a"}
    assert any("stored as the string '0'" in n for n in rec.config_notes)
    assert rec.seed.seed == 3 and rec.seed.seeded == ()
    lines = [json.loads(x) for x in (a.experiment.dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in lines if "train_loss" in r]
    assert steps == list(range(len(steps))) and len(steps) == 8  # 4 batches x 2 epochs, every step
    assert rec.checkpoints and rec.checkpoints[-1].name.endswith(".ckpt") and Path(rec.checkpoints[-1].path).is_file()
    assert rec.checkpoints[-1].step == 8


def test_a_nan_loss_marks_the_lightning_run_diverged(fitted) -> None:
    _, _, b = fitted
    rec = read_record(b.experiment.dir)
    assert rec.diverged and "train_loss=" in rec.diverged_at and rec.final_metrics["train_loss"] in ("nan", "inf")


def test_show_diff_export(fitted, request: pytest.FixtureRequest) -> None:
    store, _, _ = fitted
    show = runner.invoke(app, ["runs", "show", "pl-b", "--store", str(store)])
    assert show.exit_code == 0 and "DIVERGED" in show.output and "lightning" in show.output, show.output
    diff = runner.invoke(app, ["runs", "diff", "pl-a", "pl-b", "--store", str(store), "--json"])
    keys = {(d["category"], d["key"]) for d in json.loads(diff.stdout)["result"]["differences"]}
    assert ("config", "hparams.lr") in keys and ("metrics", "diverged") in keys
    pytest.importorskip("mlflow")
    uri = f"sqlite:///{request.getfixturevalue('mlflow_sqlite_db')}"  # a new database with mlflow's tables made
    res = runner.invoke(app, ["runs", "export", "pl-a", "--store", str(store), "--mlflow", uri, "--json"])
    assert res.exit_code == 0, res.output
    (e,) = json.loads(res.stdout)["result"]
    assert e["metric_points"] >= 8 and e["params"] >= 2


class TinyWithTest(Tiny):
    def test_step(self, batch, batch_idx):  # noqa: ANN001 - Lightning's API
        x, y = batch
        self.log("test_loss", torch.nn.functional.mse_loss(self.net(x), y))


def test_test_after_fit_lands_in_the_same_run(tmp_path: Path) -> None:
    # issue 21 item 1: finalize after fit closed the run, and test()'s test_loss went to a stopped writer
    from lightning.pytorch.loggers import CSVLogger

    L.seed_everything(3, verbose=False)
    x = torch.randn(32, 4)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
    ours, csv = ExpkitLogger(store=tmp_path / "runs", name="late-test"), CSVLogger(str(tmp_path / "csv"))
    trainer = L.Trainer(
        max_epochs=1,
        logger=[ours, csv],
        log_every_n_steps=1,
        accelerator="cpu",
        devices=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        default_root_dir=str(tmp_path),
    )
    model = TinyWithTest(0.01)
    trainer.fit(model, loader)
    trainer.test(model, loader, verbose=False)
    ours.experiment.finish()
    logged = [json.loads(line) for line in (ours.experiment.dir / "metrics.jsonl").read_text().splitlines()]
    import csv as csvmod

    with open(Path(csv.log_dir) / "metrics.csv") as f:
        theirs = list(csvmod.DictReader(f))
    assert any(row.get("test_loss") for row in theirs)  # Lightning's own CSVLogger kept it
    for row in theirs:  # every value Lightning's own logger kept is in our record, at its step
        for key, value in row.items():
            if key in ("step", "epoch") or not value:
                continue
            assert any(r["step"] == int(row["step"]) and r.get(key) == pytest.approx(float(value)) for r in logged), (
                key,
                row["step"],
            )
    assert read_record(ours.experiment.dir).final_metrics["test_loss"] == pytest.approx(
        float(next(r["test_loss"] for r in theirs if r.get("test_loss")))
    )
