"""DQN on a 4x4 gridworld with an experience replay buffer and a target network.

Unusual but correct: the TD target r + gamma * (1 - done) * max_a' Q_target(s', a')
is computed from a separate target network under torch.no_grad() (the PyTorch
equivalent of tf.stop_gradient on the target Q values discussed in the report), so
no gradient flows into the target; the target network's weights are hard-copied from
the online network every few hundred steps with load_state_dict and it is never given
to the optimizer. Terminal transitions are masked, a Huber loss is used and gradients
are clipped by norm.

Source: https://github.com/openai/baselines/issues/105
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(2)

SIZE, GAMMA, BATCH = 4, 0.95, 32
TOTAL_STEPS, TARGET_SYNC, LEARN_START, TRAIN_EVERY = 1200, 100, 150, 2


class ReplayBuffer:
    def __init__(self, capacity):
        self.capacity, self.data, self.idx = capacity, [], 0

    def append(self, item):
        if len(self.data) < self.capacity:
            self.data.append(item)
        else:
            self.data[self.idx] = item
        self.idx = (self.idx + 1) % self.capacity

    def sample(self, n):
        return random.sample(self.data, n)


class GridWorld:
    def __init__(self):
        self.goal = (SIZE - 1, SIZE - 1)
        self.pit = (1, 1)
        self.reset()

    def reset(self):
        self.pos = (0, 0)
        self.t = 0
        return self.obs()

    def obs(self):
        o = torch.zeros(SIZE * SIZE)
        o[self.pos[0] * SIZE + self.pos[1]] = 1.0
        return o

    def step(self, a):
        dr, dc = [(-1, 0), (1, 0), (0, -1), (0, 1)][a]
        r_, c_ = self.pos
        self.pos = (min(max(r_ + dr, 0), SIZE - 1), min(max(c_ + dc, 0), SIZE - 1))
        self.t += 1
        if self.pos == self.goal:
            return self.obs(), 1.0, True
        if self.pos == self.pit:
            return self.obs(), -1.0, True
        return self.obs(), -0.01, self.t >= 50


def qnet():
    return nn.Sequential(nn.Linear(SIZE * SIZE, 64), nn.ReLU(), nn.Linear(64, 4))


def main():
    env = GridWorld()
    online, target = qnet(), qnet()
    target.load_state_dict(online.state_dict())
    opt = torch.optim.Adam(online.parameters(), lr=3e-3)
    buf = ReplayBuffer(5000)
    obs, ep_ret, returns = env.reset(), 0.0, []
    for step in range(TOTAL_STEPS):
        eps = max(0.05, 1.0 - step / (0.5 * TOTAL_STEPS))
        if random.random() < eps:
            a = random.randrange(4)
        else:
            with torch.no_grad():
                a = online(obs).argmax().item()
        nobs, r, done = env.step(a)
        buf.append((obs, a, r, nobs, float(done)))
        ep_ret += r
        obs = nobs
        if done:
            returns.append(ep_ret)
            obs, ep_ret = env.reset(), 0.0

        if step >= LEARN_START and step % TRAIN_EVERY == 0:
            batch = buf.sample(BATCH)
            s = torch.stack([b[0] for b in batch])
            a_t = torch.tensor([b[1] for b in batch])
            r_t = torch.tensor([b[2] for b in batch])
            s2 = torch.stack([b[3] for b in batch])
            d_t = torch.tensor([b[4] for b in batch])
            with torch.no_grad():
                td_target = r_t + GAMMA * (1 - d_t) * target(s2).max(1).values
            q_sa = online(s).gather(1, a_t[:, None]).squeeze(1)
            loss = F.smooth_l1_loss(q_sa, td_target)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(online.parameters(), 10.0)
            opt.step()
            if step % TARGET_SYNC == 0:
                target.load_state_dict(online.state_dict())
            if step % 300 == 0 or step == TOTAL_STEPS - 2:
                recent = returns[-20:]
                print(
                    f"step {step:4d} loss {loss.item():.4f} eps {eps:.2f} avg_return {sum(recent) / max(1, len(recent)):.3f}"
                )


if __name__ == "__main__":
    main()
