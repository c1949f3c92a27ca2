"""Policy gradient: log-probs over actions, advantages detached, a value baseline with its own loss.

Source: https://github.com/sunwuzhou03/reinforcement-learning-lab/issues/1
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 3))
value = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam([*policy.parameters(), *value.parameters()], lr=1e-3)
obs, returns = torch.randn(64, 4), torch.randn(64, 1)
for _step in range(3):
    opt.zero_grad()
    logp = F.log_softmax(policy(obs), dim=-1)
    actions = torch.multinomial(logp.exp(), 1)
    v = value(obs)
    adv = (returns - v).detach()
    loss = -(logp.gather(1, actions) * adv).mean() + F.mse_loss(v, returns)
    loss.backward()
    opt.step()
