"""Backbone "frozen" with requires_grad=False but left in train mode.

Turning off gradients stops the optimizer from updating BatchNorm's affine
weights, but the running_mean/running_var buffers are still updated on every
forward pass in train mode.  The supposedly frozen feature extractor drifts
towards the new data statistics; the backbone should also be put in eval().
Source: https://github.com/lightly-ai/lightly/issues/1438
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU())
head = nn.Linear(32, 3)
for p in backbone.parameters():
    p.requires_grad = False
opt = torch.optim.SGD(head.parameters(), lr=0.1)
stats_before = backbone[1].running_mean.clone()

backbone.train()  # BUG-LINE
head.train()
for _step in range(6):
    x = torch.randn(32, 8) * 3 + 1
    y = torch.randint(0, 3, (32,))
    loss = nn.functional.cross_entropy(head(backbone(x)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
drift = (backbone[1].running_mean - stats_before).abs().max().item()
print(f"loss {loss.item():.4f} frozen BN running_mean drift {drift:.3f}")
