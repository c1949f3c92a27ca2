"""Predictions (N, 1) against targets (N,): mse_loss broadcasts to (N, N) and fits every target to every row.

Source: https://github.com/deepset-ai/FARM/issues/229
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(32, 5)
y = X @ torch.arange(5.0)
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)  # BUG-LINE
    loss.backward()
    opt.step()
