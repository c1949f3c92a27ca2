"""The head's parameters are added again to the optimizer list: SGD updates them twice per step.

Source: https://github.com/pytorch/pytorch/issues/40967
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 2))
params = list(model.parameters()) + list(model[2].parameters())  # BUG-LINE
opt = torch.optim.SGD(params, lr=0.1)
X, y = torch.randn(30, 10), torch.randint(0, 2, (30,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
