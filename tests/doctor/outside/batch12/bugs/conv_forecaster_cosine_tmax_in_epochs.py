"""Multi-horizon forecasting of synthetic sensor series with a small 1-D convolutional network, trained for a few epochs over a DataLoader with a cosine-annealing learning-rate schedule that is stepped after every optimizer step. The schedule horizon T_max is given in epochs although the scheduler is stepped per iteration, so the learning rate falls to zero after a handful of iterations, then climbs back up and oscillates through many cosine periods during the run. No warning is raised (CosineAnnealingLR happily continues past T_max); the wrong learning rate is in effect from the first iterations.
Source: https://github.com/ScrollPrize/villa/pull/1495
"""

import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
C, W, H, N = 3, 32, 4, 640
t = torch.arange(N + W + H, dtype=torch.float32)
base = torch.stack([torch.sin(2 * math.pi * t / p) for p in (12, 20, 31)])
series = base + 0.2 * torch.randn_like(base)
X = torch.stack([series[:, i : i + W] for i in range(N)])
Y = torch.stack([series[0, i + W : i + W + H] for i in range(N)])
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)

model = nn.Sequential(
    nn.Conv1d(C, 16, 5, padding=2),
    nn.ReLU(),
    nn.Conv1d(16, 16, 5, padding=2),
    nn.ReLU(),
    nn.Flatten(),
    nn.Linear(16 * W, H),
)
num_epochs = 3
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=num_epochs)  # BUG-LINE

step = 0
for epoch in range(num_epochs):
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 6 == 0:
            print(f"step {step} loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.6f}")
        step += 1

with torch.no_grad():
    print("final mse", round(nn.functional.mse_loss(model(X), Y).item(), 5))
