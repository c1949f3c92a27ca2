"""In the shared actor-critic network the advantage (return - value) used in the
policy-gradient loss is not wrapped in stop-gradient/detach. The policy loss then
also backpropagates into the value head and the shared trunk, pushing the value
estimate in whatever direction increases log-prob-weighted advantage: the critic
is corrupted and the policy tends to collapse onto a single action.

Source: https://github.com/coreylynch/async-rl/issues/8
"""

import torch
from torch import nn


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(4, 32), nn.Tanh())
        self.pi = nn.Linear(32, 2)
        self.v = nn.Linear(32, 1)

    def forward(self, s):
        h = self.trunk(s)
        return self.pi(h), self.v(h).squeeze(-1)


torch.manual_seed(0)
net = ActorCritic()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for _step in range(6):
    states = torch.randn(32, 4)
    logits, values = net(states)
    dist = torch.distributions.Categorical(logits=logits)
    actions = dist.sample()
    returns = (actions == (states[:, 0] > 0).long()).float()
    advantage = returns - values  # BUG-LINE
    policy_loss = -(dist.log_prob(actions) * advantage).mean()
    value_loss = advantage.pow(2).mean()
    entropy = dist.entropy().mean()
    opt.zero_grad()
    (policy_loss + 0.5 * value_loss - 0.01 * entropy).backward()
    opt.step()
print("policy", policy_loss.item(), "value", value_loss.item())
