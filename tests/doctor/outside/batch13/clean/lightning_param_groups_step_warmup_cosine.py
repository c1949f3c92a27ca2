"""Lightning automatic optimization with two parameter groups and a per-step warmup+cosine LR.

Unusual but correct: the backbone and the head get different learning rates and the bias /
LayerNorm parameters are excluded from weight decay (four param groups). The LambdaLR schedule
is expressed in optimizer steps (linear warmup then cosine decay over trainer.estimated_stepping_batches)
and is returned with "interval": "step", so Lightning steps it after every optimizer step
rather than once per epoch.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/16564
"""

import math
import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(2048, 20)
Y = (torch.tanh(X[:, :5]) @ torch.randn(5, 3)).argmax(1)


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(20, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 64), nn.GELU())
        self.head = nn.Linear(64, 3)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.head(self.backbone(x)), y)
        if self.global_step % 40 == 0:
            lrs = [g["lr"] for g in self.trainer.optimizers[0].param_groups]
            print(f"step {self.global_step:3d} loss {loss.item():.4f} lr backbone {lrs[0]:.5f} head {lrs[2]:.5f}")
        return loss

    def configure_optimizers(self):
        def split(module):
            decay, no_decay = [], []
            for n, p in module.named_parameters():
                (no_decay if p.ndim == 1 else decay).append(p)
            return decay, no_decay

        bb_d, bb_nd = split(self.backbone)
        hd_d, hd_nd = split(self.head)
        opt = torch.optim.AdamW(
            [
                {"params": bb_d, "lr": 1e-3, "weight_decay": 0.05},
                {"params": bb_nd, "lr": 1e-3, "weight_decay": 0.0},
                {"params": hd_d, "lr": 5e-3, "weight_decay": 0.05},
                {"params": hd_nd, "lr": 5e-3, "weight_decay": 0.0},
            ]
        )
        total = self.trainer.estimated_stepping_batches
        warm = max(1, total // 10)

        def factor(step):
            if step < warm:
                return (step + 1) / warm
            t = (step - warm) / max(1, total - warm)
            return 0.5 * (1 + math.cos(math.pi * min(1.0, t)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step", "frequency": 1}}


dl = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
model = Model()
pl.Trainer(
    max_epochs=5,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
).fit(model, dl)
with torch.no_grad():
    acc = (model.head(model.backbone(X)).argmax(1) == Y).float().mean().item()
print(f"train accuracy {acc:.3f}")
