"""The optimizer is built, then the model is rebuilt (a re-init for a new run): the optimizer holds the old parameters.

Source: https://github.com/pytorch/pytorch/issues/7844
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def make():
    return nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 2))


model = make()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
torch.manual_seed(1)
model = make()  # BUG-LINE
X, y = torch.randn(32, 6), torch.randint(0, 2, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
