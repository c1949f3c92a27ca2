"""The warm-up factor uses // so it is 0 until step 1000: the lr is zero for the whole run's start.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
warmup = 1000
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1, s // warmup))  # BUG-LINE
X, y = torch.randn(40, 8), torch.randint(0, 2, (40,))
for _step in range(4):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
    sched.step()
