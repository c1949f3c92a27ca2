"""LightningModule with manual optimization and a warmup LR schedule that never advances.

configure_optimizers returns an optimizer plus a LambdaLR linear-warmup scheduler with
interval="step". Because the module sets automatic_optimization = False, Lightning no longer
calls lr_scheduler.step(); in manual optimization the user must fetch self.lr_schedulers() and
step it. training_step never does, so the learning rate stays at the first warmup value
(1% of the base LR) for the entire run and the model barely trains. No warning is emitted.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/12284
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

X = torch.randn(2048, 16)
W = torch.randn(16, 4)
Y = (X @ W).argmax(1)


class Classifier(pl.LightningModule):
    def __init__(self, lr=0.05, warmup=100):
        super().__init__()
        self.automatic_optimization = False
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
        self.lr, self.warmup = lr, warmup

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()  # BUG-LINE
        if self.global_step % 40 == 0:
            lr = opt.optimizer.param_groups[0]["lr"]
            print(f"step {self.global_step:3d} loss {loss.item():.4f} lr {lr:.5f}")
        return loss

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        warm = self.warmup
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


dl = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
model = Classifier()
trainer = pl.Trainer(
    max_epochs=6,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, dl)
with torch.no_grad():
    acc = (model.net(X).argmax(1) == Y).float().mean().item()
print(f"train accuracy {acc:.3f}")
