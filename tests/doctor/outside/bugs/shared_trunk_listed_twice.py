"""Actor and critic share a trunk; concatenating their parameter lists lists the trunk twice.

Source: https://github.com/thu-ml/tianshou/issues/395
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
trunk = nn.Linear(8, 16)
actor = nn.Sequential(trunk, nn.ReLU(), nn.Linear(16, 4))
critic = nn.Sequential(trunk, nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=1e-3)  # BUG-LINE
obs, act, ret = torch.randn(32, 8), torch.randint(0, 4, (32,)), torch.randn(32, 1)
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(actor(obs), act) + F.mse_loss(critic(obs), ret)
    loss.backward()
    opt.step()
