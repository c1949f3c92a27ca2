"""Train a DQN agent on a tiny deterministic chain MDP (8 states, move left/right, reward at the
right end) with an experience buffer and a "target network" that is supposed to be a frozen copy of
the online Q-network, refreshed every 20 steps. The target network is created by plain assignment
(target_net = q_net), so it is the very same module object: every optimiser step immediately
changes the bootstrap targets and the periodic "sync" is a no-op. Training runs and the loss goes
down, but the algorithm is Q-learning chasing its own moving target from the first update.

Source: https://github.com/higgsfield/RL-Adventure/issues/32
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
N_STATES, GAMMA = 8, 0.9


def step_env(s, a):
    s2 = max(0, min(N_STATES - 1, s + (1 if a == 1 else -1)))
    r = 1.0 if s2 == N_STATES - 1 else 0.0
    return s2, r, s2 == N_STATES - 1


def one_hot(s):
    return F.one_hot(torch.as_tensor(s), N_STATES).float()


q_net = nn.Sequential(nn.Linear(N_STATES, 32), nn.ReLU(), nn.Linear(32, 2))
target_net = q_net  # BUG-LINE
opt = torch.optim.Adam(q_net.parameters(), lr=1e-2)
buffer = []
s = 0
for t in range(400):
    a = random.randrange(2) if random.random() < 0.3 else int(q_net(one_hot(s)).argmax())
    s2, r, done = step_env(s, a)
    buffer.append((s, a, r, s2, done))
    s = 0 if done else s2
buffer = buffer[-400:]

for it in range(120):
    batch = random.sample(buffer, 32)
    st = one_hot([b[0] for b in batch])
    at = torch.tensor([b[1] for b in batch])
    rt = torch.tensor([b[2] for b in batch])
    s2t = one_hot([b[3] for b in batch])
    dt = torch.tensor([float(b[4]) for b in batch])
    q = q_net(st).gather(1, at[:, None]).squeeze(1)
    with torch.no_grad():
        target = rt + GAMMA * (1 - dt) * target_net(s2t).max(1).values
    loss = F.smooth_l1_loss(q, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 20 == 0:
        target_net.load_state_dict(q_net.state_dict())
with torch.no_grad():
    v = q_net(one_hot(list(range(N_STATES)))).max(1).values
print("final td loss", round(loss.item(), 5))
print("V(s):", [round(x, 3) for x in v.tolist()])
print("target is online net:", target_net is q_net)
