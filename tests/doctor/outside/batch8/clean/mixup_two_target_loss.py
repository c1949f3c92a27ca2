"""Mixup: inputs are convex combinations of two examples and the loss mixes both labels.

lam ~ Beta(alpha, alpha); inputs are lam * x + (1 - lam) * x[perm] and the
loss is lam * CE(pred, y) + (1 - lam) * CE(pred, y[perm]).  Training inputs
not matching their integer labels one-to-one is intentional.
Source: https://github.com/huggingface/pytorch-image-models/issues/46
"""

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()
x = torch.randn(128, 16)
y = x[:, :4].argmax(1)

for _step in range(8):
    lam = float(np.random.beta(0.4, 0.4))
    perm = torch.randperm(x.size(0))
    mixed = lam * x + (1 - lam) * x[perm]
    pred = model(mixed)
    loss = lam * criterion(pred, y) + (1 - lam) * criterion(pred, y[perm])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"mixup loss {loss.item():.4f}")
