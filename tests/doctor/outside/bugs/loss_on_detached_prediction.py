"""The data term is computed on pred.detach(); only the L2 term reaches the weights, which shrink toward zero.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(40, 8)
y = X[:, :1] - X[:, 1:2]
for _step in range(3):
    opt.zero_grad()
    pred = model(X)
    reg = sum(p.pow(2).sum() for p in model.parameters())
    loss = F.mse_loss(pred.detach(), y) + 1e-4 * reg  # BUG-LINE
    loss.backward()
    opt.step()
