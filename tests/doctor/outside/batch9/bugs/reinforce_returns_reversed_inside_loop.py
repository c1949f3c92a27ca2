"""Discounted returns are reversed inside the accumulation loop instead of once after it.

The list of discounted rewards is built backwards and .reverse() is called on every iteration,
so the returns end up shuffled relative to the time steps: each log-probability is weighted by
the return of a different step from the very first policy update.
Source: https://github.com/PacktPublishing/Tensorflow-2-Reinforcement-Learning-Cookbook/issues/27
"""

import torch

torch.manual_seed(0)
policy = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
gamma = 0.9

for _episode in range(8):
    states = torch.randn(12, 4)
    dist = torch.distributions.Categorical(logits=policy(states))
    actions = dist.sample()
    rewards = (actions == (states[:, 0] > 0).long()).float().tolist()
    discounted, g = [], 0.0
    for r in reversed(rewards):
        g = r + gamma * g
        discounted.append(g)
        discounted.reverse()  # BUG-LINE
    returns = torch.tensor(discounted)
    loss = -(dist.log_prob(actions) * returns).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"pg loss {loss.item():.4f}")
