"""REINFORCE on a small, self-contained CartPole.

The per-step log-probabilities of an episode are first averaged into a single
scalar and that scalar is then multiplied with every discounted return G_t.
The loss becomes -mean(log pi) * sum_t G_t, so every action of the episode gets
the same credit (the total return) and the per-step credit assignment of
REINFORCE is lost. Training runs and the return still creeps up a little, but
the policy learns much less than with -sum_t log pi(a_t|s_t) * G_t.

Source: https://github.com/Farama-Foundation/Gymnasium/issues/1336
"""

import math

import numpy as np
import torch
import torch.nn as nn

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


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))

    def forward(self, s):
        return torch.distributions.Categorical(logits=self.net(s))


env = CartPole(seed=0)
policy = Policy()
opt = torch.optim.Adam(policy.parameters(), lr=5e-3)
gamma = 0.99
running = 10.0

for episode in range(120):
    s = env.reset()
    log_probs, rewards = [], []
    done = False
    while not done:
        dist = policy(torch.from_numpy(s))
        a = dist.sample()
        log_probs.append(dist.log_prob(a))
        s, r, done = env.step(int(a))
        rewards.append(r)

    g, returns = 0.0, []
    for r in reversed(rewards):
        g = r + gamma * g
        returns.insert(0, g)
    returns = torch.tensor(returns)

    log_probs = torch.stack(log_probs)
    log_prob_term = log_probs.mean()  # BUG-LINE
    loss = -(log_prob_term * returns).sum()

    opt.zero_grad()
    loss.backward()
    opt.step()

    running = 0.95 * running + 0.05 * len(rewards)
    if episode % 20 == 0 or episode == 119:
        print(f"episode {episode:3d}  length {len(rewards):3d}  running length {running:6.1f}  loss {loss.item():.4f}")
