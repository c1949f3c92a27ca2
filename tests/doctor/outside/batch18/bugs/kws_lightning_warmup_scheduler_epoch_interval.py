"""Keyword-spotting CNN in Lightning whose step-based warmup schedule is stepped per epoch.

The LightningModule builds a linear-warmup + cosine LambdaLR whose lambda counts
optimizer steps (warmup_steps=300, total_steps=3000), but configure_optimizers
returns the scheduler dict without "interval": "step".  Lightning's default interval
is "epoch", so the scheduler is advanced once per epoch instead of once per batch.
For the whole run the learning rate stays at a tiny fraction of the peak (it is
still inside the first few "warmup steps"), so the keyword classifier barely moves:
the loss hovers near log(num_classes) and accuracy near chance.  Nothing errors.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/5584
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

N_MELS, N_FRAMES, N_KEYWORDS = 20, 32, 5
HPARAMS = dict(peak_lr=2e-3, warmup_steps=300, total_steps=3000, weight_decay=1e-4)


def synth_log_mel(n_per_class):
    """Each keyword is a formant-like band sweeping over time, plus noise."""
    feats, labels = [], []
    t = torch.linspace(0, 1, N_FRAMES)
    mel = torch.arange(N_MELS).float().unsqueeze(1)
    for k in range(N_KEYWORDS):
        for _ in range(n_per_class):
            start = 3 + 3 * k + torch.randn(1) * 0.5
            slope = (-1) ** k * (2 + k)
            centre = start + slope * t
            spec = torch.exp(-0.5 * ((mel - centre) / 1.5) ** 2)
            spec = spec + 0.3 * torch.randn(N_MELS, N_FRAMES)
            feats.append(torch.log1p(spec.clamp_min(0)).unsqueeze(0))
            labels.append(k)
    return torch.stack(feats), torch.tensor(labels)


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, N_KEYWORDS)

    def forward(self, x):
        return self.head(self.conv(x).flatten(1))


def warmup_cosine(warmup_steps, total_steps):
    def fn(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return fn


class KWSModule(pl.LightningModule):
    def __init__(self, **hp):
        super().__init__()
        self.save_hyperparameters()
        self.net = KWSNet()

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        if self.global_step % 25 == 0:
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            print(f"step {self.global_step:4d} loss {loss.item():.4f} acc {acc.item():.2f} lr {lr:.2e}")
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.peak_lr, weight_decay=self.hparams.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, warmup_cosine(self.hparams.warmup_steps, self.hparams.total_steps)
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched}}  # BUG-LINE


def main():
    x, y = synth_log_mel(128)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    module = KWSModule(**HPARAMS)
    trainer = pl.Trainer(
        max_epochs=5,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, loader)
    module.eval()
    with torch.no_grad():
        acc = (module.net(x).argmax(-1) == y).float().mean().item()
    print(f"final train accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
