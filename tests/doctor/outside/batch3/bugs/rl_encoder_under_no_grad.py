"""An actor-critic agent whose update encodes the observations inside ``torch.no_grad()``: the CNN encoder is in
the optimizer and meant to learn from the critic's loss, but the features reach the heads without a graph, so
the encoder never gets a gradient and stays at its random weights. The heads still learn; nothing fails.

Source: https://github.com/rll-research/cic/issues/5
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 7 * 7, 32))
actor = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
critic = nn.Sequential(nn.Linear(32 + 4, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam([*encoder.parameters(), *actor.parameters(), *critic.parameters()], lr=3e-4)
obs = torch.randn(256, 3, 16, 16)
actions = torch.randn(256, 4)
returns = torch.randn(256, 1)
for i in range(0, 256, 32):
    with torch.no_grad():  # BUG-LINE
        h = encoder(obs[i : i + 32])
    q = critic(torch.cat([h, actions[i : i + 32]], dim=1))
    critic_loss = F.mse_loss(q, returns[i : i + 32])
    actor_loss = -critic(torch.cat([h, torch.tanh(actor(h))], dim=1)).mean()
    opt.zero_grad()
    (critic_loss + actor_loss).backward()
    opt.step()
