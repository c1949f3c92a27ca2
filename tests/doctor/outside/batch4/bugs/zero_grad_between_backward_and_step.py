"""The optimizer.zero_grad() call was moved into the middle of the loop, between loss.backward() and
optimizer.step(). Every step therefore applies an all-zero gradient: the weights never move (Adam/SGD take no
step on zero gradients), the loss is printed each batch and nothing errors.

Source: https://velog.io/@rhss10/기본-optimizer.zerograd는-어디에-넣어주어야-할까
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(128, 10)
y = X[:, :1] * 2.0 - X[:, 1:2]
for i in range(0, 128, 32):
    loss = F.mse_loss(model(X[i : i + 32]), y[i : i + 32])
    loss.backward()
    opt.zero_grad()  # BUG-LINE
    opt.step()
