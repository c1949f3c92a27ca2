"""Manual optimization in a LightningModule that never clears gradients.

With automatic_optimization = False, Lightning hands full control to training_step: it no
longer calls optimizer.zero_grad(). The step below calls manual_backward and opt.step() but
never zeroes the gradients, so every .grad keeps the running sum of all gradients since the
start of training. Each update therefore uses the accumulated history rather than the current
mini-batch gradient, so the parameters keep moving along stale directions and the loss climbs
back up after an initial drop. Nothing errors.

Source: https://github.com/meta-pytorch/torchforge/pull/71
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

X = torch.randn(2048, 12)
Y = torch.sin(X[:, :3]).sum(1, keepdim=True) + 0.1 * torch.randn(2048, 1)


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = nn.Sequential(nn.Linear(12, 64), nn.Tanh(), nn.Linear(64, 1))

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.manual_backward(loss)
        opt.step()  # BUG-LINE
        if self.global_step % 30 == 0:
            print(f"step {self.global_step:3d} loss {loss.item():.4f}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


dl = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
model = Regressor()
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
