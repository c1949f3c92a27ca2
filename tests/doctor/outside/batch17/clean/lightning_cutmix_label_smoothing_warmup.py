"""Lightning CNN classifier on synthetic 3x16x16 pattern images trained with CutMix.

Clean program. Unusual on purpose: inside training_step a random box from a shuffled
copy of the batch is pasted into every image (so samples are mixed with each other on
purpose), lambda is recomputed from the actual box area, and the loss is the
lambda-weighted sum of two cross-entropies against the original and the shuffled labels,
each with label_smoothing=0.1; the learning rate starts at 0 and warms up linearly,
then decays with cosine, stepped every optimizer step (interval="step"); validation uses
clean, unmixed images. The report asks how to do mixup in Lightning; the answer is to
mix inside training_step, as done here.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/790
"""

import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

C, S = 4, 16


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, C, (n,), generator=g)
    x = 0.5 * torch.randn(n, 3, S, S, generator=g)
    for i in range(n):
        ch, half = int(y[i]) % 3, int(y[i]) // 3
        if half == 0:
            x[i, ch, :, : S // 2] += 1.0
        else:
            x[i, ch, : S // 2, :] += 1.0
            x[i, (ch + 1) % 3] -= 0.5
    return x, y


class Net(pl.LightningModule):
    def __init__(self, total_steps):
        super().__init__()
        self.total_steps = total_steps
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, C),
        )

    def forward(self, x):
        return self.body(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        lam = torch.distributions.Beta(1.0, 1.0).sample().item()
        perm = torch.randperm(x.size(0))
        cut = math.sqrt(1 - lam)
        h, w = int(S * cut), int(S * cut)
        cy, cx = torch.randint(0, S, (2,)).tolist()
        y1, y2 = max(cy - h // 2, 0), min(cy + h // 2, S)
        x1, x2 = max(cx - w // 2, 0), min(cx + w // 2, S)
        x = x.clone()
        x[:, :, y1:y2, x1:x2] = x[perm, :, y1:y2, x1:x2]
        lam = 1 - (y2 - y1) * (x2 - x1) / (S * S)
        out = self(x)
        loss = lam * F.cross_entropy(out, y, label_smoothing=0.1) + (1 - lam) * F.cross_entropy(
            out, y[perm], label_smoothing=0.1
        )
        if self.global_step % 25 == 0:
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            print(f"step {self.global_step:3d}  lr {lr:.5f}  lam {lam:.2f}  loss {loss.item():.4f}")
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_acc", (self(x).argmax(1) == y).float().mean())

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=3e-3, weight_decay=0.05)
        warm = 20

        def schedule(step):
            if step < warm:
                return step / warm
            return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, self.total_steps - warm)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


xtr, ytr = make_data(512, 1)
xva, yva = make_data(128, 2)
train_dl = DataLoader(TensorDataset(xtr, ytr), batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(xva, yva), batch_size=128)
EPOCHS = 12
trainer = pl.Trainer(
    max_epochs=EPOCHS,
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    num_sanity_val_steps=0,
)
trainer.fit(Net(total_steps=EPOCHS * len(train_dl)), train_dl, val_dl)
print("final val acc", float(trainer.callback_metrics["val_acc"]))
