"""A per-group LambdaLR that keeps the pretrained backbone's learning rate at exactly 0 for the first 20 steps
(the new head trains alone first) and then ramps it up, while the head's group runs at full rate from step 0.
Correct by design: a group at lr 0 for a while is the plan, not a typo.

Source: https://github.com/brian6091/Dreambooth/issues/28
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(10, 48), nn.ReLU())
head = nn.Linear(48, 4)
opt = torch.optim.SGD([{"params": backbone.parameters(), "lr": 0.01}, {"params": head.parameters(), "lr": 0.05}])
freeze_steps, ramp_steps = 20, 20
sched = torch.optim.lr_scheduler.LambdaLR(
    opt,
    lr_lambda=[lambda s: 0.0 if s < freeze_steps else min(1.0, (s - freeze_steps + 1) / ramp_steps), lambda s: 1.0],
)
X, y = torch.randn(320, 10), torch.randint(0, 4, (320,))
for step in range(60):
    i = (step * 32) % 320
    loss = F.cross_entropy(head(backbone(X[i : i + 32])), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
