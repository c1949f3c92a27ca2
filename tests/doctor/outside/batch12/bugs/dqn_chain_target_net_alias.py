"""Deep Q-learning on a small synthetic chain MDP with an experience-replay buffer and a target network that is supposed to be a frozen copy of the online Q-network, synchronised every few updates. The target network is created by plain assignment, so it is the very same module object as the online network: every optimizer step immediately moves the bootstrap target too, and the periodic load_state_dict "sync" copies the network onto itself. Nothing errors or warns, the TD loss still goes down, but the algorithm is no longer DQN with a fixed target (the moving-target instability the target net exists to remove is back from the first update).
Source: https://github.com/abhi1345/deep-q-rank/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_STATES, N_ACTIONS, GAMMA = 10, 2, 0.95


def step_env(s, a):
    # action 1 moves right, action 0 moves left; reward 1 at the right end
    s2 = torch.clamp(s + torch.where(a == 1, 1, -1), 0, N_STATES - 1)
    r = (s2 == N_STATES - 1).float()
    done = r.clone()
    return s2, r, done


# fill a replay buffer with a uniform random behaviour policy
s = torch.randint(0, N_STATES - 1, (4096,))
a = torch.randint(0, N_ACTIONS, (4096,))
s2, r, d = step_env(s, a)
buffer = (s, a, r, s2, d)

q_net = nn.Sequential(nn.Linear(N_STATES, 64), nn.ReLU(), nn.Linear(64, N_ACTIONS))
target_net = q_net  # BUG-LINE
optimizer = torch.optim.Adam(q_net.parameters(), lr=1e-3)


def onehot(x):
    return F.one_hot(x, N_STATES).float()


for it in range(60):
    idx = torch.randint(0, 4096, (128,))
    bs, ba, br, bs2, bd = (t[idx] for t in buffer)
    q = q_net(onehot(bs)).gather(1, ba[:, None]).squeeze(1)
    with torch.no_grad():
        q_next = target_net(onehot(bs2)).max(1).values
        target = br + GAMMA * (1.0 - bd) * q_next
    loss = F.smooth_l1_loss(q, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if it % 20 == 19:
        target_net.load_state_dict(q_net.state_dict())
    if it % 10 == 0:
        print(f"step {it} td_loss {loss.item():.5f}")

with torch.no_grad():
    print("final Q(s0):", q_net(onehot(torch.tensor([0]))).tolist())
    print("checksum", round(sum(p.sum().item() for p in q_net.parameters()), 6))
