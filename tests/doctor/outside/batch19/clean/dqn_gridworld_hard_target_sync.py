"""DQN on a small grid world with a periodically synced target network (correct).

Unusual but correct: two copies of the Q-network are kept.  The online network
is trained; the target network is never given to the optimizer, is evaluated
under ``torch.no_grad()`` to build the bootstrapped TD targets (so no gradient
flows into the target branch), and is hard-synced from the online network every
``TARGET_SYNC`` updates with ``load_state_dict``.  Terminal transitions mask the
bootstrap term.  This is the fix asked for in the report that the DQN tutorial
had no target-Q network.

Source: https://github.com/pytorch/tutorials/issues/181
"""

import copy
import random
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)

SIZE, MAX_T = 4, 16
GAMMA, BATCH, TARGET_SYNC = 0.9, 32, 40


class Grid:
    def reset(self):
        self.r, self.c, self.t = 0, 0, 0
        return self.obs()

    def obs(self):
        o = torch.zeros(2 * SIZE)
        o[self.r] = 1.0
        o[SIZE + self.c] = 1.0
        return o

    def step(self, a):
        dr, dc = [(-1, 0), (1, 0), (0, -1), (0, 1)][a]
        self.r = min(max(self.r + dr, 0), SIZE - 1)
        self.c = min(max(self.c + dc, 0), SIZE - 1)
        self.t += 1
        goal = self.r == SIZE - 1 and self.c == SIZE - 1
        return self.obs(), (1.0 if goal else -0.02), goal or self.t >= MAX_T, goal


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * SIZE, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, s):
        return self.net(s)


def main():
    env = Grid()
    online = QNet()
    target = copy.deepcopy(online)
    for p in target.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(online.parameters(), lr=3e-3)
    buf = deque(maxlen=5000)
    updates, eps = 0, 1.0
    for episode in range(50):
        s, done, ret = env.reset(), False, 0.0
        while not done:
            if random.random() < eps:
                a = random.randrange(4)
            else:
                with torch.no_grad():
                    a = int(online(s).argmax())
            s2, r, done, goal = env.step(a)
            buf.append((s, a, r, s2, float(goal)))
            s, ret = s2, ret + r
            if len(buf) >= BATCH and env.t % 2 == 0:
                batch = random.sample(buf, BATCH)
                S = torch.stack([b[0] for b in batch])
                A = torch.tensor([b[1] for b in batch])
                R = torch.tensor([b[2] for b in batch])
                S2 = torch.stack([b[3] for b in batch])
                TERM = torch.tensor([b[4] for b in batch])
                with torch.no_grad():
                    y = R + GAMMA * (1.0 - TERM) * target(S2).max(1).values
                q = online(S).gather(1, A[:, None]).squeeze(1)
                loss = F.smooth_l1_loss(q, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                updates += 1
                if updates % TARGET_SYNC == 0:
                    target.load_state_dict(online.state_dict())
        eps = max(0.05, eps * 0.94)
        if episode % 10 == 0 or episode == 49:
            print(f"episode {episode:3d} return {ret:.2f} eps {eps:.2f} updates {updates}")
    s, done, ret = env.reset(), False, 0.0
    while not done:
        with torch.no_grad():
            s, r, done, _ = env.step(int(online(s).argmax()))
        ret += r
    print(f"greedy return {ret:.2f} in {env.t} steps")


if __name__ == "__main__":
    main()
