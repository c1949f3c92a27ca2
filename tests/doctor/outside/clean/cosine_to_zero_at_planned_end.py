"""CosineAnnealingLR(T_max = planned steps): lr reaches 0 only at the end of the run.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = 50
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
X, y = torch.randn(40, 8), torch.randint(0, 2, (40,))
for _step in range(4):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
    sched.step()
