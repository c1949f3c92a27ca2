"""The trainer calls optimizer.zero_grad() between loss.backward() and
optimizer.step(). All gradients are wiped just before they are used, so every
step applies a zero update (plain SGD) and the parameters never change; with
weight decay or momentum only those terms move the weights.

Source: https://github.com/lucidrains/byol-pytorch/issues/93
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 16)
target = torch.randn(64, 8)
for _step in range(6):
    loss = nn.functional.mse_loss(model(x), target)
    loss.backward()
    opt.zero_grad()  # BUG-LINE
    opt.step()
print("loss", loss.item())
