"""A constant-with-linear-warmup schedule uses ``lambda step: step / warmup`` and the scheduler is only stepped
after each update, so the very first optimizer update runs with learning rate exactly 0: the first batch's
gradient is computed and thrown away, and momentum/Adam state is filled with it without any parameter change.

Source: https://github.com/verl-project/verl/issues/3674
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
warmup = 4
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, step / warmup))  # BUG-LINE
X = torch.randn(256, 8)
y = X.sum(1, keepdim=True)
for i in range(0, 256, 32):
    loss = F.mse_loss(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
