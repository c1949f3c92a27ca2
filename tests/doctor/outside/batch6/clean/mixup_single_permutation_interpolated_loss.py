"""Mixup done as in the reference implementation: one Beta-distributed lambda and ONE permutation per batch,
used both to mix the inputs and to pick the second label, with the loss interpolated as
``lam * CE(pred, y_a) + (1 - lam) * CE(pred, y_b)``. Inputs are deliberately mixed across samples.

Source: https://github.com/facebookresearch/mixup-cifar10
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
np.random.seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
X, y = torch.randn(256, 20), torch.randint(0, 5, (256,))
for i in range(0, 256, 32):
    xb, yb = X[i : i + 32], y[i : i + 32]
    lam = float(np.random.beta(1.0, 1.0))
    index = torch.randperm(xb.size(0))
    mixed = lam * xb + (1 - lam) * xb[index]
    y_a, y_b = yb, yb[index]
    pred = model(mixed)
    loss = lam * F.cross_entropy(pred, y_a) + (1 - lam) * F.cross_entropy(pred, y_b)
    opt.zero_grad()
    loss.backward()
    opt.step()
