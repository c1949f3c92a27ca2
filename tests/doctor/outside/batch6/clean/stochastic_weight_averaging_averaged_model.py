"""Stochastic Weight Averaging: an ``AveragedModel`` keeps a running average of the weights visited by SGD and
is updated with ``update_parameters`` after each step; the averaged copy has no optimizer and receives no
gradients by design, and a SWALR schedule keeps the lr constant-high during averaging.

Source: https://arxiv.org/abs/1803.05407
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.swa_utils import SWALR, AveragedModel

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
swa_model = AveragedModel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
swa_sched = SWALR(opt, swa_lr=0.02, anneal_epochs=2)
X = torch.randn(256, 10)
y = X[:, :3].sum(1, keepdim=True)
for i in range(0, 256, 32):
    loss = F.mse_loss(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    swa_model.update_parameters(model)
    swa_sched.step()
