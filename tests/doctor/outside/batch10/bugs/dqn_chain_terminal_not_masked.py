"""Deep Q-learning on a small deterministic chain MDP (7 states, actions left/right, reward +1 for reaching the
right end, which terminates the episode, small step cost otherwise) with a replay buffer and a target network.
The TD target is built as r + gamma * max_a Q_target(s', a) for every transition, without multiplying the
bootstrap term by (1 - done). Transitions into the terminal state therefore keep bootstrapping from an
arbitrary next-state value, so Q-values of states next to the goal drift away from their true value of 1.
The loss is an ordinary Huber loss, nothing fails and no warning is produced.
Source: https://github.com/navneet-nmk/pytorch-rl/issues/2
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
torch.manual_seed(0)
torch.set_num_threads(2)
N, GAMMA = 7, 0.95


def step_env(s, a):
    s2 = max(0, s - 1) if a == 0 else s + 1
    if s2 == N - 1:
        return s2, 1.0, True
    return s2, -0.01, False


def onehot(s):
    v = torch.zeros(N)
    v[s] = 1.0
    return v


q = nn.Sequential(nn.Linear(N, 32), nn.ReLU(), nn.Linear(32, 2))
q_tgt = nn.Sequential(nn.Linear(N, 32), nn.ReLU(), nn.Linear(32, 2))
q_tgt.load_state_dict(q.state_dict())
opt = torch.optim.Adam(q.parameters(), lr=1e-2)
buf = []
s = 0
for t in range(600):
    eps = max(0.1, 1.0 - t / 300)
    if random.random() < eps:
        a = random.randrange(2)
    else:
        with torch.no_grad():
            a = int(q(onehot(s)).argmax())
    s2, r, done = step_env(s, a)
    buf.append((s, a, r, s2, float(done)))
    s = 0 if done else s2
    if len(buf) >= 32:
        batch = random.sample(buf, 32)
        S = torch.stack([onehot(b[0]) for b in batch])
        A = torch.tensor([b[1] for b in batch])
        R = torch.tensor([b[2] for b in batch])
        S2 = torch.stack([onehot(b[3]) for b in batch])
        D = torch.tensor([b[4] for b in batch])
        with torch.no_grad():
            target = R + GAMMA * q_tgt(S2).max(1).values  # BUG-LINE
        pred = q(S).gather(1, A[:, None]).squeeze(1)
        loss = F.smooth_l1_loss(pred, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if t % 50 == 0:
        q_tgt.load_state_dict(q.state_dict())
with torch.no_grad():
    print("Q(s=N-2, right) (true value 1.0):", round(q(onehot(N - 2))[1].item(), 4))
    print("Q(s=0, right):", round(q(onehot(0))[1].item(), 4))
