"""Trains a small 1-D CNN on synthetic multichannel time-series windows (3 classes) with PyTorch
Lightning. configure_optimizers pairs AdamW with a linear warm-up/decay schedule whose length is given
in optimizer steps, but the scheduler is returned without an "interval" key, so Lightning uses the
default interval "epoch" and steps the schedule only at epoch ends. The run is limited by max_steps
and never finishes an epoch, so the learning rate stays at the first warm-up value (1/100 of the peak)
for every step. Nothing errors or warns; the model simply trains with a tiny learning rate.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/3869
"""

import lightning as L
import torch
import torch.nn as nn

torch.manual_seed(0)
N, C, T = 2048, 3, 64
t = torch.linspace(0, 1, T)
y = torch.randint(0, 3, (N,))
freq = torch.tensor([2.0, 5.0, 9.0])[y]
X = torch.sin(2 * torch.pi * freq[:, None, None] * t) * torch.ones(N, C, 1) + 0.5 * torch.randn(N, C, T)


class SeriesClassifier(L.LightningModule):
    def __init__(self, peak_lr=3e-3, warmup=100, total=1000):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(C, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8), nn.Flatten(), nn.Linear(128, 3)
        )
        self.peak_lr, self.warmup, self.total = peak_lr, warmup, total

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.peak_lr)

        def lr_lambda(step):
            if step < self.warmup:
                return (step + 1) / self.warmup
            return max(0.0, (self.total - step) / (self.total - self.warmup))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched}}  # BUG-LINE


model = SeriesClassifier()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=8, shuffle=True)
trainer = L.Trainer(
    max_steps=60,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    accelerator="cpu",
    enable_model_summary=False,
)
trainer.fit(model, loader)
print("final lr:", trainer.optimizers[0].param_groups[0]["lr"])
with torch.no_grad():
    print("train accuracy:", (model.net(X).argmax(-1) == y).float().mean().item())
