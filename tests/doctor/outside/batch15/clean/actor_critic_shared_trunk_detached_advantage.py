"""Advantage actor-critic with a shared trunk on a chain MDP.

Source: https://github.com/bentrevett/pytorch-rl/issues/2

The issue points out that the tutorial's policy loss ignored the critic; the fix
discussed there uses the critic's values as a baseline but detached
(values.detach()), so the policy-gradient term does not push the critic. This program
does that: one network with a shared trunk and two heads, one optimizer, the
advantage (returns - values) detached before it multiplies the log-probabilities,
while the value head is regressed on the (constant) Monte-Carlo returns. Actions are
sampled from the policy, so data is non-deterministic by design; an entropy bonus is
included.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_STATES = 6
GAMMA = 0.95


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(N_STATES, 64), nn.Tanh())
        self.pi = nn.Linear(64, 2)
        self.v = nn.Linear(64, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.pi(h), self.v(h).squeeze(-1)


def run_episode(net, max_len=20):
    s = 0
    states, actions, rewards = [], [], []
    for _ in range(max_len):
        states.append(s)
        logits, _ = net(F.one_hot(torch.tensor(s), N_STATES).float())
        a = int(torch.distributions.Categorical(logits=logits).sample())
        actions.append(a)
        s = max(0, s - 1) if a == 0 else s + 1
        done = s == N_STATES - 1
        rewards.append(1.0 if done else -0.05)
        if done:
            break
    return states, actions, rewards


net = ActorCritic()
opt = torch.optim.Adam(net.parameters(), lr=3e-3)

for episode in range(1, 301):
    states, actions, rewards = run_episode(net)
    returns, g = [], 0.0
    for r in reversed(rewards):
        g = r + GAMMA * g
        returns.insert(0, g)
    returns = torch.tensor(returns)
    x = F.one_hot(torch.tensor(states), N_STATES).float()
    logits, values = net(x)
    dist = torch.distributions.Categorical(logits=logits)
    log_probs = dist.log_prob(torch.tensor(actions))
    advantage = (returns - values).detach()
    policy_loss = -(log_probs * advantage).mean()
    value_loss = F.mse_loss(values, returns)
    loss = policy_loss + 0.5 * value_loss - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if episode % 50 == 0:
        print(f"episode {episode} len {len(rewards)} loss {loss.item():.4f} value_loss {value_loss.item():.4f}")
