"""A streaming actor-critic computes the "return" of a state as the discounted sum of the rewards collected so
far in the episode (a running forward sum) instead of the discounted sum of future rewards. The critic is
regressed on the past, the advantages are meaningless, and the policy still trains without any error.

Source: https://github.com/mohmdelsayed/streaming-drl/issues/3
"""

import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2))
critic = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(list(policy.parameters()) + list(critic.parameters()), lr=3e-3)
gamma = 0.95
for _episode in range(6):
    states = torch.randn(20, 4)
    dist = torch.distributions.Categorical(logits=policy(states))
    actions = dist.sample()
    rewards = (actions == (states[:, 1] > 0).long()).float()
    returns, g = [], 0.0
    for r in rewards.tolist():
        g = r + gamma * g  # BUG-LINE
        returns.append(g)
    returns = torch.tensor(returns)
    values = critic(states).squeeze(1)
    adv = (returns - values).detach()
    loss = -(dist.log_prob(actions) * adv).mean() + 0.5 * (returns - values).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
