"""Manual-optimization LightningModule whose LR scheduler is never stepped.

With `automatic_optimization = False`, Lightning (since 1.3) no longer calls
`lr_scheduler.step()`; the scheduler returned by configure_optimizers must be fetched with
`self.lr_schedulers()` and stepped by hand. This training_step zeroes, back-propagates and steps
the optimizer but never steps the warmup scheduler, so the learning rate stays frozen at the
warmup start value (2% of the target) for the whole run. Nothing warns; training just crawls.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/6825
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(512, 16)
Y = X[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(512, 1)
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()  # BUG-LINE
        if self.global_step % 20 == 0:
            print(f"step {self.global_step:3d} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.5f}")

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, 0.02 + s / 20))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


trainer = pl.Trainer(
    accelerator="cpu",
    max_steps=100,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Regressor(), loader)
