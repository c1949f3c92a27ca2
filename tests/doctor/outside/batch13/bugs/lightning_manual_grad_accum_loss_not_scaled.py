"""Gradient accumulation done by hand in a manually optimised LightningModule, without
scaling the loss.

The module accumulates gradients over N = 8 micro-batches and steps the optimizer every N
batches, following the manual-optimization docs. Each micro-batch loss is a mean over that
micro-batch, but it is back-propagated without dividing by N, so the accumulated gradient is
the SUM of N mean gradients: N times the gradient of the intended large batch. With SGD this is
an 8x larger step than configured; the run becomes unstable and ends worse than the same
configuration with the loss divided by N. No warning is raised.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/17975
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

N = 8
X = torch.randn(4096, 20)
w = torch.randn(20, 1)
Y = X @ w + 0.1 * torch.randn(4096, 1)


class AccumRegressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.manual_backward(loss)  # BUG-LINE
        if (batch_idx + 1) % N == 0:
            opt.step()
            opt.zero_grad()
            if (batch_idx + 1) % (8 * N) == 0:
                print(f"epoch {self.current_epoch} batch {batch_idx + 1:3d} loss {loss.item():.4f}")
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.02)


dl = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
model = AccumRegressor()
trainer = pl.Trainer(
    max_epochs=3,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, dl)
with torch.no_grad():
    print(f"final full-data mse {F.mse_loss(model.net(X), Y).item():.4f}")
