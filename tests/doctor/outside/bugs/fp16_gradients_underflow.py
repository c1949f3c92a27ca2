"""A half-precision model with a small loss and no GradScaler: most gradients underflow to exactly zero.

Source: https://github.com/engichang1467/Open-Rig3R/issues/35
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)).half()  # BUG-LINE
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(64, 16).half()
y = (X[:, :1] * 1e-3).half()
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X) * 1e-3, y) * 1e-2
    loss.backward()
    opt.step()
