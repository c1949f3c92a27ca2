"""Dueling double DQN with a replay buffer on a small CartPole.

The TD target is r + gamma * Q_target(s', argmax_a Q_online(s', a)) for every
transition, including the ones where the pole fell: the done flag is stored in
the replay buffer but never used to cut the bootstrap. Terminal states are
valued like ordinary states, so falling is not penalised and Q-values drift
upward; the loss looks normal but the agent learns a much worse policy.

Source: https://github.com/cyoon1729/deep-Q-networks/pull/6
"""

import math
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
np.random.seed(0)
random.seed(0)


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
        fell = abs(x) > 2.4 or abs(th) > 0.2095
        return self.s.astype(np.float32), 1.0, fell, self.t >= 200


class DuelingQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.feat = nn.Sequential(nn.Linear(4, 64), nn.ReLU())
        self.value = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
        self.adv = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, s):
        h = self.feat(s)
        a = self.adv(h)
        return self.value(h) + a - a.mean(dim=1, keepdim=True)


online, target = DuelingQ(), DuelingQ()
target.load_state_dict(online.state_dict())
opt = torch.optim.Adam(online.parameters(), lr=1e-3)
buffer = []
env = CartPole(seed=0)
gamma, batch_size = 0.99, 64

s = env.reset()
ep_len, lengths = 0, []
for step in range(3000):
    eps = max(0.05, 1.0 - step / 1500)
    if random.random() < eps:
        a = random.randrange(2)
    else:
        with torch.no_grad():
            a = int(online(torch.from_numpy(s)[None]).argmax())
    s2, r, fell, truncated = env.step(a)
    buffer.append((s, a, r, s2, float(fell)))
    buffer = buffer[-10000:]
    s = s2
    ep_len += 1
    if fell or truncated:
        lengths.append(ep_len)
        ep_len = 0
        s = env.reset()

    if len(buffer) >= 256:
        batch = random.sample(buffer, batch_size)
        states = torch.tensor(np.array([b[0] for b in batch]))
        actions = torch.tensor([b[1] for b in batch])
        rewards = torch.tensor([b[2] for b in batch])
        next_states = torch.tensor(np.array([b[3] for b in batch]))
        dones = torch.tensor([b[4] for b in batch])

        q = online(states).gather(1, actions[:, None]).squeeze(1)
        with torch.no_grad():
            best = online(next_states).argmax(dim=1, keepdim=True)
            next_q = target(next_states).gather(1, best).squeeze(1)
            td_target = rewards + gamma * next_q  # BUG-LINE
        loss = F.smooth_l1_loss(q, td_target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            target.load_state_dict(online.state_dict())
        if step % 500 == 0 or step == 2999:
            recent = np.mean(lengths[-10:]) if lengths else 0.0
            print(
                f"step {step:4d}  loss {loss.item():.4f}  mean Q {q.mean().item():7.2f}  recent episode length {recent:6.1f}"
            )
