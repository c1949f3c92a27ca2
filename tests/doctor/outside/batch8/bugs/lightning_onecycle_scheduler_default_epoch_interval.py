"""Per-iteration OneCycleLR returned from configure_optimizers without interval="step".

OneCycleLR is sized in optimizer steps (total_steps = steps of the whole run),
but Lightning's default scheduler interval is "epoch", so it is stepped once
per epoch.  The warm-up/annealing never happens: the learning rate stays at the
initial (tiny) value for the entire run.
Source: https://github.com/Lightning-AI/pytorch-lightning/issues/5631
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        self.lrs = []

    def training_step(self, batch, batch_idx):
        self.lrs.append(self.trainer.optimizers[0].param_groups[0]["lr"])
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=6)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched}}  # BUG-LINE


x = torch.randn(96, 8)
y = x.sum(1, keepdim=True)
model = Regressor()
trainer = pl.Trainer(
    max_steps=6,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=8))
print("lr per step: " + ", ".join(f"{lr:.4f}" for lr in model.lrs))
