"""A PPO update computes Monte-Carlo returns by walking the rollout buffer backwards, but the running discounted
sum is never reset at terminal states, so the return of the last steps of one episode includes the rewards of
the next episode. Value targets and advantages are biased from the first update; nothing fails.

Source: https://github.com/nikhilbarhate99/PPO-PyTorch/issues/8
"""

import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2))
value = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=3e-3)
gamma = 0.99
T = 128
states = torch.randn(T, 4)
with torch.no_grad():
    dist = torch.distributions.Categorical(logits=policy(states))
    actions = dist.sample()
    old_logp = dist.log_prob(actions)
rewards = (actions == (states[:, 0] > 0).long()).float().tolist()
dones = [(t + 1) % 16 == 0 for t in range(T)]
returns, running = [], 0.0
for r, d in zip(reversed(rewards), reversed(dones), strict=False):  # noqa: B007 - d unused: the bug
    running = r + gamma * running  # BUG-LINE
    returns.insert(0, running)
returns = torch.tensor(returns)
for _epoch in range(4):
    d = torch.distributions.Categorical(logits=policy(states))
    v = value(states).squeeze(1)
    adv = (returns - v).detach()
    ratio = torch.exp(d.log_prob(actions) - old_logp)
    pg = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean()
    loss = pg + 0.5 * (returns - v).pow(2).mean() - 0.01 * d.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
