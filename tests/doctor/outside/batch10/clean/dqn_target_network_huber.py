"""DQN on a small deterministic chain MDP with the ingredients of the Nature DQN recipe: experience replay, a
separate target network that is only refreshed by a hard copy every 50 environment steps (it has no optimizer
and receives no gradients), TD targets computed under no_grad with the bootstrap term masked by (1 - done),
the Huber loss, epsilon-greedy exploration, and gradient-norm clipping. The online network is the only thing
the optimizer updates.
Source: https://arxiv.org/abs/1312.5602
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
torch.manual_seed(0)
torch.set_num_threads(2)
N, GAMMA = 7, 0.95


def env_step(s, a):
    s2 = max(0, s - 1) if a == 0 else s + 1
    return (s2, 1.0, True) if s2 == N - 1 else (s2, -0.01, False)


def enc(s):
    return F.one_hot(torch.tensor(s), N).float()


online = nn.Sequential(nn.Linear(N, 32), nn.ReLU(), nn.Linear(32, 2))
target = nn.Sequential(nn.Linear(N, 32), nn.ReLU(), nn.Linear(32, 2))
target.load_state_dict(online.state_dict())
target.requires_grad_(False)
opt = torch.optim.Adam(online.parameters(), lr=1e-2)
replay, s = [], 0
for t in range(600):
    eps = max(0.1, 1 - t / 300)
    with torch.no_grad():
        a = random.randrange(2) if random.random() < eps else int(online(enc(s)).argmax())
    s2, r, done = env_step(s, a)
    replay.append((s, a, r, s2, float(done)))
    s = 0 if done else s2
    if len(replay) >= 32:
        b = random.sample(replay, 32)
        S = torch.stack([enc(x[0]) for x in b])
        A = torch.tensor([x[1] for x in b])
        R = torch.tensor([x[2] for x in b])
        S2 = torch.stack([enc(x[3]) for x in b])
        Dn = torch.tensor([x[4] for x in b])
        with torch.no_grad():
            y = R + GAMMA * (1 - Dn) * target(S2).max(1).values
        q = online(S).gather(1, A.unsqueeze(1)).squeeze(1)
        loss = F.smooth_l1_loss(q, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(online.parameters(), 10.0)
        opt.step()
    if t % 50 == 0:
        target.load_state_dict(online.state_dict())
with torch.no_grad():
    print("greedy actions:", [int(online(enc(i)).argmax()) for i in range(N - 1)])
    print("Q(N-2, right):", round(online(enc(N - 2))[1].item(), 4))
