"""Episodic advantage actor-critic (shared trunk, one optimizer) on a small CartPole.

The advantage used in the policy-gradient term is computed as returns - V(s)
without detaching V(s). The policy loss therefore also back-propagates into the
value head and the shared trunk: the optimizer moves the value estimate to make
the policy loss smaller instead of treating the advantage as a constant. The
critic becomes biased (its estimates are dragged by log-probabilities), the
baseline is wrong and the actor learns less. No error is raised.

Source: https://github.com/deepchem/deepchem/pull/618
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
np.random.seed(0)


class CartPole:
    def __init__(self, seed=0):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.s = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.s.astype(np.float32)

    def step(self, a):
        x, xd, th, thd = self.s
        force = 10.0 if a == 1 else -10.0
        ct, st = math.cos(th), math.sin(th)
        temp = (force + 0.05 * thd * thd * st) / 1.1
        thacc = (9.8 * st - ct * temp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1))
        xacc = temp - 0.05 * thacc * ct / 1.1
        x, xd = x + 0.02 * xd, xd + 0.02 * xacc
        th, thd = th + 0.02 * thd, thd + 0.02 * thacc
        self.s = np.array([x, xd, th, thd])
        self.t += 1
        done = abs(x) > 2.4 or abs(th) > 0.2095 or self.t >= 200
        return self.s.astype(np.float32), 1.0, done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(4, 64), nn.Tanh())
        self.pi = nn.Linear(64, 2)
        self.v = nn.Linear(64, 1)

    def forward(self, s):
        h = self.trunk(s)
        return torch.distributions.Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)


env = CartPole(seed=0)
model = ActorCritic()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
gamma = 0.99
running = 10.0

for episode in range(120):
    s = env.reset()
    log_probs, values, rewards = [], [], []
    done = False
    while not done:
        dist, v = model(torch.from_numpy(s))
        a = dist.sample()
        log_probs.append(dist.log_prob(a))
        values.append(v)
        s, r, done = env.step(int(a))
        rewards.append(r)

    g, returns = 0.0, []
    for r in reversed(rewards):
        g = r + gamma * g
        returns.insert(0, g)
    returns = torch.tensor(returns) / 50.0
    log_probs = torch.stack(log_probs)
    values = torch.stack(values)

    advantage = returns - values  # BUG-LINE
    policy_loss = -(log_probs * advantage).mean()
    value_loss = F.mse_loss(values, returns)
    loss = policy_loss + 0.5 * value_loss

    opt.zero_grad()
    loss.backward()
    opt.step()

    running = 0.95 * running + 0.05 * len(rewards)
    if episode % 20 == 0 or episode == 119:
        print(
            f"episode {episode:3d}  length {len(rewards):3d}  running length {running:6.1f}  "
            f"policy {policy_loss.item():+.4f}  value {value_loss.item():.4f}"
        )
