"""StepLR with gamma=0.0 (meant 0.1... typed as 0.): the lr is 0 from the second step on.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.0)  # BUG-LINE
X = torch.randn(32, 8)
y = X.sum(1, keepdim=True)
for _step in range(4):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
    sched.step()
