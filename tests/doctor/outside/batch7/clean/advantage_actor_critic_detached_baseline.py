"""Advantage actor-critic with a shared trunk: the advantage used to weight the
policy log-probabilities is computed from value.detach(), so the policy loss does
not push the critic, while the critic is trained by its own squared-error term.
An entropy bonus is subtracted on purpose to encourage exploration.

Source: https://arxiv.org/abs/1602.01783
"""

import torch
from torch import nn

torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(4, 32), nn.Tanh())
pi_head, v_head = nn.Linear(32, 3), nn.Linear(32, 1)
params = list(trunk.parameters()) + list(pi_head.parameters()) + list(v_head.parameters())
opt = torch.optim.Adam(params, lr=3e-3)
for _step in range(6):
    s = torch.randn(64, 4)
    h = trunk(s)
    dist = torch.distributions.Categorical(logits=pi_head(h))
    value = v_head(h).squeeze(-1)
    a = dist.sample()
    ret = (a == s[:, :3].argmax(1)).float()
    adv = ret - value.detach()
    loss = -(dist.log_prob(a) * adv).mean() + 0.5 * (ret - value).pow(2).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
