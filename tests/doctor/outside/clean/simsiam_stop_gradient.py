"""Symmetric SimSiam loss: each branch's projection is detached as the other's target, by design.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 16))
pred = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 16))
opt = torch.optim.SGD([*enc.parameters(), *pred.parameters()], lr=0.05)
X = torch.randn(32, 10)
for _step in range(3):
    x1, x2 = X + 0.1 * torch.randn_like(X), X + 0.1 * torch.randn_like(X)
    z1, z2 = enc(x1), enc(x2)
    p1, p2 = pred(z1), pred(z2)
    opt.zero_grad()
    loss = -(F.cosine_similarity(p1, z2.detach()).mean() + F.cosine_similarity(p2, z1.detach()).mean()) / 2
    loss.backward()
    opt.step()
