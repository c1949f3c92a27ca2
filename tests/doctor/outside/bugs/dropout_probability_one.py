"""Dropout(p=1.0) (meant 0.1) zeroes the hidden layer: the first layer gets an all-zero gradient.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(1.0), nn.Linear(32, 2))  # BUG-LINE
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 10), torch.randint(0, 2, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
