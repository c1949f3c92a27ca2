"""Trains a small CNN on synthetic 3-class images with PyTorch Lightning and a linear learning-rate
warmup over the first 50 optimizer steps (LambdaLR expressed in steps). configure_optimizers returns
the scheduler without "interval": "step", so Lightning uses its default interval "epoch" and calls
scheduler.step() once per epoch. The whole (one-epoch) run therefore trains at the warmup's first
value, 1/50 of the intended learning rate. No error or warning; the loss barely moves.

Source: https://github.com/galilai-group/stable-worldmodel/issues/280
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class SmallCNN(L.LightningModule):
    def __init__(self, lr=3e-3, warmup=50):
        super().__init__()
        self.lr, self.warmup = lr, warmup
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(16, 3),
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"])
        return loss

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / self.warmup))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched}}  # BUG-LINE


g = torch.Generator().manual_seed(1)
x = torch.randn(3200, 1, 12, 12, generator=g) * 0.5
y = torch.randint(0, 3, (3200,), generator=g)
for c in range(3):
    x[y == c, 0, 2 + 3 * c : 5 + 3 * c, 2:10] += 1.5
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
model = SmallCNN()
trainer = L.Trainer(
    max_steps=80,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    accelerator="cpu",
)
trainer.fit(model, loader)
m = trainer.callback_metrics
print(f"final loss {m['train_loss'].item():.4f} lr at end {m['lr'].item():.2e}")
