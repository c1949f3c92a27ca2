"""The Hugging Face Trainer and Lightning callbacks run the same checks: the bug draws its finding, the
same run written right draws none."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


def _fit(L, module, data, *, batch_size: int, max_steps: int):
    """A quiet CPU Lightning fit of ``module`` on ``data`` with the doctor's callback; the callback."""
    from expkit.doctor import DoctorLightningCallback

    cb = DoctorLightningCallback()
    trainer = L.Trainer(
        max_steps=max_steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[cb],
    )
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=batch_size))
    return cb


def test_trainer_callback_finds_unshifted_labels_in_a_custom_compute_loss(tmp_path):
    transformers = pytest.importorskip("transformers")
    from expkit.doctor import DoctorTrainerCallback

    class Ids(torch.utils.data.Dataset):
        def __init__(self):
            self.data = torch.randint(0, 32, (16, 12), generator=torch.Generator().manual_seed(0))

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            return {"input_ids": self.data[i], "labels": self.data[i]}

    class Unshifted(transformers.Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            logits = model(**inputs).logits  # (B, T, V)
            return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))  # not shifted

    def run(trainer_cls):
        torch.manual_seed(0)
        config = transformers.GPT2Config(vocab_size=32, n_positions=12, n_embd=16, n_layer=1, n_head=2)
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path),
            per_device_train_batch_size=4,
            max_steps=3,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            disable_tqdm=True,
        )
        cb = DoctorTrainerCallback()
        trainer_cls(model=transformers.GPT2LMHeadModel(config), args=args, train_dataset=Ids(), callbacks=[cb]).train()
        assert cb.watch is None  # closed after the watched steps
        return [f.check for f in cb.findings]

    assert run(Unshifted) == ["labels_not_shifted"]
    assert run(transformers.Trainer) == []  # the model shifts labels=input_ids itself


def test_lightning_callback_finds_softmax_before_cross_entropy():
    L = pytest.importorskip("lightning")

    class Classifier(L.LightningModule):
        def __init__(self, softmax: bool):
            super().__init__()
            self.net, self.softmax = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), softmax

        def training_step(self, batch, _):
            x, y = batch
            out = self.net(x)
            return F.cross_entropy(out.softmax(dim=1) if self.softmax else out, y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    def run(softmax: bool):
        torch.manual_seed(0)
        data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
        cb = _fit(L, Classifier(softmax), data, batch_size=16, max_steps=3)
        return [f.check for f in cb.findings]

    assert run(True) == ["softmax_before_cross_entropy"]
    assert run(False) == []


@pytest.mark.parametrize("warmup", [4, 40])
def test_lightning_warmup_stepped_per_epoch_by_default_is_found_and_per_step_is_not(warmup):
    # warmup 40: longer than the run's 6 steps as well (batch18/bugs/kws_lightning_warmup_scheduler_epoch_interval.py,
    # from https://github.com/Lightning-AI/pytorch-lightning/issues/5584); named at the return without 'interval'
    L = pytest.importorskip("lightning")
    from source_lines import line_of

    class Regressor(L.LightningModule):
        def __init__(self, interval: str | None):
            super().__init__()
            self.net, self.interval = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)), interval

        def training_step(self, batch, _):
            x, y = batch
            return F.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.parameters(), lr=1e-2)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
            config = {"scheduler": sched} | ({"interval": self.interval} if self.interval else {})
            return {"optimizer": opt, "lr_scheduler": config}  # HANDED OVER

    def run(interval: str | None):
        torch.manual_seed(0)
        x = torch.randn(96, 8)
        data = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
        cb = _fit(L, Regressor(interval), data, batch_size=8, max_steps=6)  # 12 batches an epoch
        return {f.check: f for f in cb.findings}

    found = run(None)
    f = found["lr_never_reaches_set_value"]
    assert f.evidence["scheduler_steps_planned"] == 1 and f.evidence["optimizer_steps_planned"] == 6
    assert f.line == line_of("# HANDED OVER", Regressor)
    assert ("longer than this run" in f.message) == (warmup == 40)
    assert "lr_never_reaches_set_value" not in run("step")


def test_a_lightning_training_step_that_returns_no_loss_is_named_at_its_last_line():
    L = pytest.importorskip("lightning")
    from source_lines import line_of

    class NoReturn(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(8, 3)

        def training_step(self, batch, _):
            x, y = batch
            self.log("loss", F.cross_entropy(self.net(x), y))  # the step's last line: no return

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    cb = _fit(L, NoReturn(), data, batch_size=16, max_steps=3)
    (f,) = [f for f in cb.findings if f.check == "step_changes_nothing"]
    assert f.line == line_of("# the step's last line", NoReturn) and "returned no loss" in f.message


def test_lightning_heads_kept_in_a_plain_dict_are_named_where_they_are_built():
    L = pytest.importorskip("lightning")
    from source_lines import line_of

    class TwoHeads(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
            self.heads = {"a": nn.Linear(16, 3), "b": nn.Linear(16, 1)}  # a plain dict: never registered

        def training_step(self, batch, _):
            x, y = batch
            h = self.trunk(x)
            return F.cross_entropy(self.heads["a"](h), y) + self.heads["b"](h).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    cb = _fit(L, TwoHeads(), data, batch_size=16, max_steps=3)
    (f,) = [f for f in cb.findings if f.check == "trainable_not_updated"]
    assert f.line == line_of("# a plain dict: never registered", TwoHeads)


def test_a_lightning_modules_own_loss_weight_left_out_of_its_optimizer_is_named_at_the_optimizer():
    # uncertainty-weighted multi-task losses: training_step calls a submodule only, the LightningModule holds the
    # log-variances itself, and configure_optimizers hands over the submodule's parameters (the outside development
    # program batch18/bugs/tabular_multitask_uncertainty_weights_not_optimized.py, from
    # https://github.com/ifzhang/FairMOT/issues/19): registered, held by no optimizer, named where it was built
    L = pytest.importorskip("lightning")
    from source_lines import line_of

    class MultiTask(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Linear(8, 4)
            self.log_vars = nn.Parameter(torch.zeros(2))

        def training_step(self, batch, _):
            x, y = batch
            out = self.trunk(x)
            losses = torch.stack([F.cross_entropy(out[:, :3], y), out[:, 3].pow(2).mean()])
            return (torch.exp(-self.log_vars) * losses + self.log_vars).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.trunk.parameters(), lr=0.1)  # THE OPTIMIZER

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    cb = _fit(L, MultiTask(), data, batch_size=16, max_steps=3)
    (f,) = [f for f in cb.findings if f.check == "trainable_not_updated"]
    assert f.line == line_of("# THE OPTIMIZER", MultiTask) and "no optimizer holds them" in f.message


@pytest.mark.parametrize("interval", [None, "step"])
def test_a_per_step_schedule_returned_without_interval_step_is_found(interval):
    # the outside development program batch16/bugs/lightning_onecycle_default_interval.py (from
    # https://github.com/pytorch/pytorch/issues/65417): OneCycleLR declared in optimizer steps, returned as
    # [optimizer], [scheduler], so Lightning steps it once per epoch
    L = pytest.importorskip("lightning.pytorch")

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=0.05)
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=100)
            if interval is None:
                return [opt], [sched]
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": interval}}

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    cb = _fit(L, Module(), data, batch_size=8, max_steps=4)
    found = [f for f in cb.findings if f.check == "schedule_not_stepped"]
    if interval == "step":
        assert found == []
        return
    # the callback arms after configure_optimizers ran: the schedule's construction line is not known, so the
    # return is named only when doctor runs the program (tests/doctor/checks/test_lr_schedule.py)
    assert len(found) == 1 and found[0].evidence["scheduler_steps_between"] == 0
