"""The last layer is followed by ReLU while targets are mostly negative: dead outputs, zero gradient.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1), nn.ReLU())  # BUG-LINE
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(32, 4)
y = -torch.rand(32, 1) - 1
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
