"""Double DQN with replay buffer and a periodically hard-copied target network.

Clean program. Unusual on purpose: the target network is a separate module that is never
given to the optimizer and is refreshed with load_state_dict every 100 steps; the TD
target is computed under no_grad (online net picks the argmax action, target net
evaluates it), masked by (1 - done) for terminal transitions, and Q(s, a) is selected
with gather. Huber loss and manual gradient-norm clipping are used. The report asks
whether the target network output needs detach(); here it is computed without a graph.

Source: https://github.com/philtabor/Deep-Q-Learning-Paper-To-Code/issues/9
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


def env_step(s, a):
    s2 = s + (1 if a == 1 else -1)
    if s2 == N_CELLS - 1:
        return s2, 1.0, True
    if s2 == 0:
        return s2, 0.2, True
    return s2, -0.01, False


def make_net():
    return nn.Sequential(nn.Linear(N_CELLS, 32), nn.ReLU(), nn.Linear(32, 2))


q_net, target_net = make_net(), make_net()
target_net.load_state_dict(q_net.state_dict())
opt = torch.optim.Adam(q_net.parameters(), lr=1e-3)

buffer, state, eps = [], N_CELLS // 2, 1.0
for step in range(500):
    if random.random() < eps:
        action = random.randrange(2)
    else:
        with torch.no_grad():
            action = int(q_net(EYE[state]).argmax())
    nxt, reward, done = env_step(state, action)
    buffer.append((state, action, reward, nxt, float(done)))
    if len(buffer) > 2000:
        buffer.pop(0)
    state = N_CELLS // 2 if done else nxt
    eps = max(0.1, eps * 0.99)

    if len(buffer) >= 64:
        s_idx, a_l, r_l, s2_idx, d_l = zip(*random.sample(buffer, 32))
        s, s2 = EYE[list(s_idx)], EYE[list(s2_idx)]
        a, r, d = torch.tensor(a_l), torch.tensor(r_l), torch.tensor(d_l)
        q = q_net(s).gather(1, a.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            best = q_net(s2).argmax(dim=1, keepdim=True)
            next_q = target_net(s2).gather(1, best).squeeze(1)
            target = r + GAMMA * (1.0 - d) * next_q
        loss = F.smooth_l1_loss(q, target)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(q_net.parameters(), 5.0)
        opt.step()
        if step % 100 == 0:
            target_net.load_state_dict(q_net.state_dict())
        if step % 100 == 0 or step == 499:
            with torch.no_grad():
                qs = q_net(EYE[N_CELLS // 2])
            print(
                f"step {step:4d}  td_loss {loss.item():.5f}  eps {eps:.2f}  "
                f"Q(start) left {qs[0].item():.3f} right {qs[1].item():.3f}"
            )
