"""ReduceLROnPlateau is stepped with the training loss but constructed with ``mode="max"`` (left over from when
it tracked AUROC). A decreasing loss never counts as an improvement, so the learning rate is cut every
``patience`` steps while training is going well, and the model stops learning early. No warning.

Source: https://github.com/FunctionLab/selene/issues/115
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0)  # BUG-LINE
X = torch.randn(320, 10)
y = X[:, :3].sum(1, keepdim=True)
for i in range(0, 320, 32):
    loss = F.mse_loss(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step(loss.item())
