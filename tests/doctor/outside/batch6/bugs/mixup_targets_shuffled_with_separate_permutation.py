"""Mixup draws one random permutation to pair the images and a second, independent permutation to pair the
labels, so every mixed input is trained towards the label mixture of two *other* samples. The loss is a valid
soft-target cross-entropy and decreases a little, but the supervision is largely wrong; nothing fails.

Source: https://github.com/xudonmao/VMT/issues/1
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
X, y = torch.randn(512, 20), torch.randint(0, 5, (512,))
X = X + F.one_hot(y, 5).float().repeat(1, 4)
for i in range(0, 512, 64):
    xb, yb = X[i : i + 64], F.one_hot(y[i : i + 64], 5).float()
    lam = float(torch.distributions.Beta(0.4, 0.4).sample())
    x_perm = torch.randperm(xb.size(0))
    y_perm = torch.randperm(yb.size(0))  # BUG-LINE
    x_mix = lam * xb + (1 - lam) * xb[x_perm]
    y_mix = lam * yb + (1 - lam) * yb[y_perm]
    loss = torch.sum(-y_mix * F.log_softmax(model(x_mix), dim=1), dim=1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
