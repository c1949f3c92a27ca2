"""Double DQN on a synthetic chain MDP with a replay buffer: the online network selects the greedy next action, a separate target network (a deep copy with requires_grad disabled) evaluates it, the TD target is built under no_grad, and after every optimizer step the target is moved towards the online weights by Polyak averaging (tau = 0.05) done in place under no_grad instead of periodic hard copies. Gradient-norm clipping is applied before each step. Unusual but correct: two networks with one optimizer, a target that is never trained directly, and in-place parameter updates outside the optimizer.
Source: https://github.com/ufal/npfl122/pull/81
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
NS, NA, GAMMA, TAU = 10, 2, 0.95, 0.05

s = torch.randint(0, NS - 1, (4096,))
a = torch.randint(0, NA, (4096,))
s2 = torch.clamp(s + torch.where(a == 1, 1, -1), 0, NS - 1)
r = (s2 == NS - 1).float()
done = r.clone()

online = nn.Sequential(nn.Linear(NS, 64), nn.ReLU(), nn.Linear(64, NA))
target = copy.deepcopy(online)
for p in target.parameters():
    p.requires_grad_(False)
optimizer = torch.optim.Adam(online.parameters(), lr=1e-3)


def oh(x):
    return F.one_hot(x, NS).float()


for it in range(60):
    idx = torch.randint(0, 4096, (128,))
    q = online(oh(s[idx])).gather(1, a[idx, None]).squeeze(1)
    with torch.no_grad():
        next_a = online(oh(s2[idx])).argmax(1, keepdim=True)
        next_q = target(oh(s2[idx])).gather(1, next_a).squeeze(1)
        y = r[idx] + GAMMA * (1 - done[idx]) * next_q
    loss = F.smooth_l1_loss(q, y)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(online.parameters(), 10.0)
    optimizer.step()
    with torch.no_grad():
        for pt, po in zip(target.parameters(), online.parameters()):
            pt.lerp_(po, TAU)
    if it % 10 == 0:
        print(f"it {it} td_loss {loss.item():.5f}")

with torch.no_grad():
    print("Q(s0)", online(oh(torch.tensor([0]))).tolist())
