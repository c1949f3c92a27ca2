"""OneCycleLR sized in optimizer steps is stepped once per epoch by Lightning.

``configure_optimizers`` builds ``OneCycleLR`` with
``total_steps=trainer.estimated_stepping_batches`` (a per-batch schedule) but
returns the bare scheduler under ``"lr_scheduler"``.  Lightning then uses the
default scheduler config, ``interval="epoch"``, so ``scheduler.step()`` runs
once per epoch instead of once per batch.  Only ``max_epochs`` of the
``epochs * batches`` planned steps are ever taken: the LR stays pinned near
``max_lr / div_factor`` (its warm-up start) for the whole run, never reaches the
peak and never anneals.  Training works, just far slower than configured,
and nothing warns about it.

Source: https://github.com/CodefyUI/CodefyUI/issues/244
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

WINDOW, HORIZON = 48, 8


def make_series(n_series=48, length=200):
    t = torch.arange(length).float()
    series = []
    for i in range(n_series):
        period = 12 + (i % 5) * 6
        s = torch.sin(2 * torch.pi * t / period) + 0.01 * t * ((i % 3) - 1) + 0.1 * torch.randn(length)
        series.append(s)
    return torch.stack(series)


def windows(series):
    xs, ys = [], []
    for s in series:
        for start in range(0, s.shape[0] - WINDOW - HORIZON, 12):
            xs.append(s[start : start + WINDOW])
            ys.append(s[start + WINDOW : start + WINDOW + HORIZON])
    return torch.stack(xs).unsqueeze(1), torch.stack(ys)


class ConvForecaster(pl.LightningModule):
    def __init__(self, max_lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(
            nn.Conv1d(1, 32, 5, padding=2),
            nn.GELU(),
            nn.Conv1d(32, 32, 5, padding=4, dilation=2),
            nn.GELU(),
        )
        self.head = nn.Linear(32 * WINDOW, HORIZON)
        self.lr_trace = []

    def forward(self, x):
        return self.head(self.encoder(x).flatten(1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss, on_epoch=True, prog_bar=False)
        self.lr_trace.append(self.trainer.optimizers[0].param_groups[0]["lr"])
        return loss

    def on_train_epoch_end(self):
        m = self.trainer.callback_metrics
        print(f"epoch {self.current_epoch} train_loss {m['train_loss_epoch'].item():.4f} lr {self.lr_trace[-1]:.2e}")

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.max_lr, weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=self.hparams.max_lr, total_steps=self.trainer.estimated_stepping_batches
        )
        return {"optimizer": optimizer, "lr_scheduler": scheduler}  # BUG-LINE


def main():
    x, y = windows(make_series())
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    model = ConvForecaster()
    trainer = pl.Trainer(
        max_epochs=5,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    print(f"lr range seen during training: {min(model.lr_trace):.2e} .. {max(model.lr_trace):.2e}")


if __name__ == "__main__":
    main()
