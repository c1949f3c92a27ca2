"""DQN on a small chain MDP with a separate target network.

Source: https://github.com/pytorch/tutorials/pull/209

The pull request adds a target network to the PyTorch DQN tutorial: a second copy of
the Q-network produces the bootstrap targets and is refreshed every N updates with
load_state_dict. This program does the same thing correctly. Unusual on purpose:
the target network is never given to any optimizer, its parameters have
requires_grad=False, targets are computed under torch.no_grad(), the replay minibatch
and epsilon-greedy actions are drawn at random, and a Huber loss is used.
"""

import copy
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)

N_STATES = 6
GAMMA = 0.9


def step_env(s, a):
    s2 = max(0, s - 1) if a == 0 else min(N_STATES - 1, s + 1)
    done = s2 == N_STATES - 1
    return s2, (1.0 if done else -0.01), done


def one_hot(idx):
    return F.one_hot(torch.as_tensor(idx), N_STATES).float()


q_net = nn.Sequential(nn.Linear(N_STATES, 32), nn.ReLU(), nn.Linear(32, 2))
target_net = copy.deepcopy(q_net)
target_net.requires_grad_(False)
target_net.eval()
opt = torch.optim.Adam(q_net.parameters(), lr=5e-3)

buffer = []
s = random.randrange(N_STATES - 1)
eps = 1.0
for step in range(1, 1201):
    if random.random() < eps:
        a = random.randrange(2)
    else:
        with torch.no_grad():
            a = int(q_net(one_hot(s)).argmax())
    s2, r, done = step_env(s, a)
    buffer.append((s, a, r, s2, float(done)))
    buffer = buffer[-2000:]
    s = random.randrange(N_STATES - 1) if done else s2
    eps = max(0.05, eps * 0.996)

    if len(buffer) >= 64:
        batch = random.sample(buffer, 64)
        bs, ba, br, bs2, bd = zip(*batch)
        bs, bs2 = one_hot(list(bs)), one_hot(list(bs2))
        ba = torch.tensor(ba)
        br, bd = torch.tensor(br), torch.tensor(bd)
        q = q_net(bs).gather(1, ba.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target = br + GAMMA * (1 - bd) * target_net(bs2).max(1).values
        loss = F.smooth_l1_loss(q, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            target_net.load_state_dict(q_net.state_dict())
        if step % 200 == 0:
            with torch.no_grad():
                greedy = q_net(torch.eye(N_STATES)).argmax(1).tolist()
            print(f"step {step} loss {loss.item():.5f} eps {eps:.2f} greedy {greedy}")
