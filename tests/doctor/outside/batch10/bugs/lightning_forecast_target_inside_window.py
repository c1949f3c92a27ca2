"""Trains a 1-D CNN one-step-ahead forecaster on a synthetic noisy sensor series with PyTorch
Lightning. The windowing code slices the input window as series[i : i + W] and the target as
series[i + W - 1] -- the last value *inside* the window -- instead of the next value series[i + W].
The model only has to copy its last input, so the training loss collapses almost immediately while
the model learns nothing about forecasting (target leakage). No error or warning.

Source: https://github.com/M-Nauta/TCDF/issues/2
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
W = 32
t = torch.arange(6000) * 0.05
series = torch.sin(t) * torch.cos(0.13 * t) + 0.2 * torch.randn(6000)


class Windows(Dataset):
    def __len__(self):
        return len(series) - W - 1

    def __getitem__(self, i):
        window = series[i : i + W]
        target = series[i + W - 1]  # BUG-LINE
        return window.unsqueeze(0), target


class Forecaster(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 16, 5, padding=2),
            nn.ReLU(),
            nn.Conv1d(16, 16, 5, padding=2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(16 * W, 1),
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(-1), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=2e-3)


loader = DataLoader(Windows(), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
model = Forecaster()
trainer = L.Trainer(
    max_steps=60,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    accelerator="cpu",
)
trainer.fit(model, loader)
with torch.no_grad():
    idx = torch.arange(0, len(series) - W - 1, 7)
    xs = torch.stack([series[i : i + W] for i in idx.tolist()]).unsqueeze(1)
    true_next = series[idx + W]
    mse_next = nn.functional.mse_loss(model.net(xs).squeeze(-1), true_next).item()
print(f"train loss {trainer.callback_metrics['train_loss'].item():.4f} mse vs true next value {mse_next:.4f}")
