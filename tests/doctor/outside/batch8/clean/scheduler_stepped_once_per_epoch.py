"""Epoch-based MultiStepLR stepped once per epoch, after the inner batch loop.

optimizer.step() runs every mini-batch while scheduler.step() is called once
at the end of each epoch, so the milestones are counted in epochs as
configured.  The learning rate is intentionally constant within an epoch.
Source: https://github.com/pytorch/pytorch/issues/3814
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[2], gamma=0.1)
x = torch.randn(32, 8)
y = x.sum(1, keepdim=True)
lrs = []

for _epoch in range(3):
    for i in range(0, 32, 16):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x[i : i + 16]), y[i : i + 16])
        loss.backward()
        opt.step()
    lrs.append(opt.param_groups[0]["lr"])
    sched.step()
print(f"loss {loss.item():.4f} lr per epoch {lrs}")
