"""Lightning module with a per-step linear-warmup LambdaLR that Lightning steps once per epoch.

configure_optimizers returns the warmup scheduler (written in optimizer steps: 50 warmup steps)
as `{"scheduler": sched}` without `"interval": "step"`. Lightning's default interval is
"epoch", so the scheduler is stepped only at epoch ends; with 16 batches per epoch the
learning rate stays at a few percent of its target for the whole run. The reporter noted that
Transformer warmup is defined per step, not per epoch.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/328
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(512, 16)
W = torch.randn(16, 4)
Y = (X @ W).argmax(1)
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
        self.lrs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.lrs.append(self.trainer.optimizers[0].param_groups[0]["lr"])
        if self.global_step % 16 == 0:
            print(f"step {self.global_step:3d} loss {loss.item():.4f} lr {self.lrs[-1]:.5f}")
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-2)
        warmup = 50
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched}}  # BUG-LINE


model = Classifier()
trainer = pl.Trainer(
    accelerator="cpu",
    max_steps=96,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)
print(f"max lr reached: {max(model.lrs):.5f} (target 0.01)")
