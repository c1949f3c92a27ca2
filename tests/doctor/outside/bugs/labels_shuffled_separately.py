"""X is permuted for shuffling but y is not: every label belongs to another row.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
X = torch.randn(64, 8)
y = (X[:, 0] > 0).long()
perm = torch.randperm(64)
X = X[perm]  # BUG-LINE
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    xb, yb = X[step * 16 : (step + 1) * 16], y[step * 16 : (step + 1) * 16]
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
