"""DQN with replay buffer and target network on a small corridor MDP.

The agent starts in the middle of a 7-cell corridor; stepping into the right end gives
+1 and ends the episode, stepping into the left end gives +0.2 and ends the episode,
every other move costs -0.01. Transitions are stored with their done flag.

Bug: the TD target bootstraps from the target network's value of the next state even
when the transition was terminal: it uses r + gamma * max_a Q'(s', a) instead of
r + gamma * (1 - done) * max_a Q'(s', a). Values of the terminal-adjacent states are
inflated by whatever the network outputs for the terminal cells, so the learned Q values
are biased; nothing errors and the TD loss still goes down. The report notes the done
flag was never used in the target and fixing that made the agent converge.

Source: https://github.com/cyoon1729/deep-Q-networks/issues/3
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(2)

N_CELLS, GAMMA = 7, 0.95


EYE = torch.eye(N_CELLS)


def one_hot(s):
    return EYE[s]


def env_step(s, a):
    s2 = s + (1 if a == 1 else -1)
    if s2 == N_CELLS - 1:
        return s2, 1.0, True
    if s2 == 0:
        return s2, 0.2, True
    return s2, -0.01, False


q_net = nn.Sequential(nn.Linear(N_CELLS, 32), nn.ReLU(), nn.Linear(32, 2))
target_net = nn.Sequential(nn.Linear(N_CELLS, 32), nn.ReLU(), nn.Linear(32, 2))
target_net.load_state_dict(q_net.state_dict())
opt = torch.optim.Adam(q_net.parameters(), lr=1e-3)

buffer = []
state = N_CELLS // 2
eps = 1.0
for step in range(500):
    if random.random() < eps:
        action = random.randrange(2)
    else:
        with torch.no_grad():
            action = int(q_net(one_hot(state)).argmax())
    nxt, reward, done = env_step(state, action)
    buffer.append((state, action, reward, nxt, float(done)))
    if len(buffer) > 2000:
        buffer.pop(0)
    state = N_CELLS // 2 if done else nxt
    eps = max(0.1, eps * 0.99)

    if len(buffer) >= 64:
        batch = random.sample(buffer, 32)
        s_idx, a_l, r_l, s2_idx, d_l = zip(*batch)
        s = EYE[list(s_idx)]
        a = torch.tensor(a_l)
        r = torch.tensor(r_l)
        s2 = EYE[list(s2_idx)]
        d = torch.tensor(d_l)
        q = q_net(s).gather(1, a.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            next_q = target_net(s2).max(dim=1).values
            target = r + GAMMA * next_q  # BUG-LINE
        loss = F.smooth_l1_loss(q, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            target_net.load_state_dict(q_net.state_dict())
        if step % 100 == 0 or step == 499:
            with torch.no_grad():
                start_q = q_net(one_hot(N_CELLS // 2))
            print(
                f"step {step:4d}  td_loss {loss.item():.5f}  eps {eps:.2f}  "
                f"Q(start) left {start_q[0].item():.3f} right {start_q[1].item():.3f}"
            )
