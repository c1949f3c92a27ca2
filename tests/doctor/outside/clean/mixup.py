"""Mixup: each input and its one-hot target are mixed with a shuffled partner; soft-target cross-entropy.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
for _step in range(3):
    lam = 0.7
    perm = torch.randperm(32)
    xm = lam * X + (1 - lam) * X[perm]
    ym = lam * F.one_hot(y, 4).float() + (1 - lam) * F.one_hot(y[perm], 4).float()
    opt.zero_grad()
    loss = F.cross_entropy(model(xm), ym)
    loss.backward()
    opt.step()
