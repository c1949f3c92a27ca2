"""CutMix augmentation: a random box from a shuffled copy of the batch is pasted into each image and the loss is
the area-weighted sum of cross-entropies against both label sets. Inputs and labels deliberately mix samples
across the batch.

Source: https://arxiv.org/abs/1905.04899
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5)
)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for _step in range(5):
    x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 5, (16,))
    lam = torch.distributions.Beta(1.0, 1.0).sample().item()
    perm = torch.randperm(x.size(0))
    cut = int(32 * (1 - lam) ** 0.5)
    cx, cy = torch.randint(0, 32, (2,)).tolist()
    x1, x2, y1, y2 = max(cx - cut // 2, 0), min(cx + cut // 2, 32), max(cy - cut // 2, 0), min(cy + cut // 2, 32)
    x[:, :, y1:y2, x1:x2] = x[perm, :, y1:y2, x1:x2]
    lam = 1 - (x2 - x1) * (y2 - y1) / (32 * 32)
    logits = model(x)
    loss = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
    opt.zero_grad()
    loss.backward()
    opt.step()
