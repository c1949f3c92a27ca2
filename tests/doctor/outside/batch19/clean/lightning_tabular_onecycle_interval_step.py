"""Lightning module with a per-batch OneCycleLR declared as interval="step" (correct).

Unusual but correct: the one-cycle schedule is sized in optimizer steps
(``steps_per_epoch=len(train_loader)``, ``epochs=max_epochs``) and returned from
``configure_optimizers`` inside a scheduler config dict with
``"interval": "step"`` and ``"frequency": 1``, so Lightning steps it after every
optimizer step: the LR warms up to ``max_lr`` and anneals back down within the
run.  The module also uses two parameter groups (no weight decay on biases and
norm weights).  Modelled on the configuration discussed in the report.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/3205
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)


def make_table(n=1536):
    x = torch.randn(n, 12)
    w = torch.randn(12, 4)
    y = (x @ w + 0.3 * torch.randn(n, 4)).argmax(-1)
    return x, y


class TabClassifier(pl.LightningModule):
    def __init__(self, steps_per_epoch, max_epochs, max_lr=5e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(12, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 4))
        self.lrs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.lrs.append(self.trainer.optimizers[0].param_groups[0]["lr"])
        self.log("loss", loss, on_step=False, on_epoch=True)
        return loss

    def on_train_epoch_end(self):
        print(
            f"epoch {self.current_epoch} loss {self.trainer.callback_metrics['loss'].item():.4f} "
            f"lr now {self.lrs[-1]:.2e}"
        )

    def configure_optimizers(self):
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            (no_decay if p.ndim == 1 else decay).append(p)
        opt = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": 1e-2},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=self.hparams.max_lr,
        )
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt,
            max_lr=self.hparams.max_lr,
            steps_per_epoch=self.hparams.steps_per_epoch,
            epochs=self.hparams.max_epochs,
            anneal_strategy="linear",
            div_factor=100,
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step", "frequency": 1}}


def main():
    x, y = make_table()
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    max_epochs = 4
    model = TabClassifier(steps_per_epoch=len(loader), max_epochs=max_epochs)
    trainer = pl.Trainer(
        max_epochs=max_epochs,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    peak = max(range(len(model.lrs)), key=lambda i: model.lrs[i])
    print(f"lr start {model.lrs[0]:.2e} peak {model.lrs[peak]:.2e} at step {peak} end {model.lrs[-1]:.2e}")
    with torch.no_grad():
        print(f"train accuracy {(model.net(x).argmax(-1) == y).float().mean().item():.3f}")


if __name__ == "__main__":
    main()
