"""Gradient accumulation over 4 micro-batches: each micro-batch loss is divided by
the number of accumulation steps, zero_grad is called only after an optimizer
step, and the optimizer steps once every 4 backward passes. The accumulated
gradient therefore equals the gradient of the mean loss over the full batch.

Source: https://github.com/huggingface/blog/pull/2414
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
accum = 4
x = torch.randn(160, 8)
y = x.sum(1, keepdim=True)
opt.zero_grad()
for i, start in enumerate(range(0, 160, 8)):
    xb, yb = x[start : start + 8], y[start : start + 8]
    loss = nn.functional.mse_loss(model(xb), yb) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
print("loss", loss.item() * accum)
