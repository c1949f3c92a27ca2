"""One-step actor-critic with a shared body: the policy loss uses ``-log_prob * (R - V).detach()`` (the value
is a baseline, so no policy gradient flows into the critic through the advantage), and the critic is trained
separately with smooth-L1 towards the return. Both losses are summed into one backward.

Source: https://github.com/pytorch/examples/blob/main/reinforcement_learning/actor_critic.py
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 64)
        self.action_head, self.value_head = nn.Linear(64, 2), nn.Linear(64, 1)

    def forward(self, x):
        h = F.relu(self.body(x))
        return F.softmax(self.action_head(h), dim=-1), self.value_head(h)


model = Policy()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
gamma = 0.99
for _episode in range(5):
    states = torch.randn(25, 4)
    probs, values = model(states)
    dist = torch.distributions.Categorical(probs)
    actions = dist.sample()
    rewards = (actions == (states[:, 2] > 0).long()).float().tolist()
    R, returns = 0.0, []
    for r in reversed(rewards):
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    values = values.squeeze(1)
    advantage = (returns - values).detach()
    loss = -(dist.log_prob(actions) * advantage).sum() + F.smooth_l1_loss(values, returns, reduction="sum")
    opt.zero_grad()
    loss.backward()
    opt.step()
