"""mixup: each batch is mixed with a shuffled copy of itself (x = lam*x + (1-lam)*x[perm]) and the loss is the
same convex combination of the cross-entropies against both label sets. The inputs no longer match a single
label and the batch permutation is deliberate.

Source: https://arxiv.org/abs/1710.09412
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
beta = torch.distributions.Beta(torch.tensor(0.4), torch.tensor(0.4))
X, y = torch.randn(192, 20), torch.randint(0, 5, (192,))
for i in range(0, 192, 32):
    xb, yb = X[i : i + 32], y[i : i + 32]
    lam = float(beta.sample())
    perm = torch.randperm(len(xb))
    logits = model(lam * xb + (1 - lam) * xb[perm])
    loss = lam * F.cross_entropy(logits, yb) + (1 - lam) * F.cross_entropy(logits, yb[perm])
    opt.zero_grad()
    loss.backward()
    opt.step()
