"""Lightning training with an exponential-moving-average (EMA) callback.

Unusual but correct: a Callback keeps an EMA copy of every parameter,
updated after each optimizer step in on_train_batch_end under no_grad;
before validation the live weights are saved and the EMA weights are copied
in, and they are restored in on_validation_end, so training always continues
from the raw optimizer-updated weights while validation reports the averaged
model. The sanity-check validation is skipped for the swap until the EMA
exists.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/10914
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


class EMA(pl.Callback):
    def __init__(self, decay=0.95):
        self.decay = decay
        self.shadow = None
        self.backup = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        with torch.no_grad():
            params = [p.detach() for p in pl_module.parameters()]
            if self.shadow is None:
                self.shadow = [p.clone() for p in params]
            else:
                for s, p in zip(self.shadow, params):
                    s.mul_(self.decay).add_(p, alpha=1 - self.decay)

    def on_validation_start(self, trainer, pl_module):
        if self.shadow is None:
            return
        self.backup = [p.detach().clone() for p in pl_module.parameters()]
        with torch.no_grad():
            for p, s in zip(pl_module.parameters(), self.shadow):
                p.copy_(s)

    def on_validation_end(self, trainer, pl_module):
        if self.backup is None:
            return
        with torch.no_grad():
            for p, b in zip(pl_module.parameters(), self.backup):
                p.copy_(b)
        self.backup = None


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        if batch_idx % 15 == 0:
            print(f"epoch {self.current_epoch} batch {batch_idx} train loss {loss.item():.4f}")
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.net(x), y))

    def on_validation_epoch_end(self):
        if not self.trainer.sanity_checking:
            print(f"epoch {self.current_epoch} val loss (EMA weights) {self.trainer.callback_metrics['val_loss']:.4f}")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def main():
    x = torch.randn(1200, 6)
    y = torch.sin(x[:, :1]) + 0.5 * x[:, 1:2] + 0.05 * torch.randn(1200, 1)
    train = DataLoader(TensorDataset(x[:960], y[:960]), batch_size=32, shuffle=True)
    val = DataLoader(TensorDataset(x[960:], y[960:]), batch_size=120)
    trainer = pl.Trainer(
        max_epochs=3,
        accelerator="cpu",
        devices=1,
        callbacks=[EMA()],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Regressor(), train, val)


if __name__ == "__main__":
    main()
