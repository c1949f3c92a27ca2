"""PPO (clipped objective, GAE) on a small CartPole with fixed-length rollouts.

Rollouts are 512 steps long and contain several episodes. In the backward GAE
recursion the TD error correctly masks V(s') at terminal steps, but the running
GAE accumulator is not reset there: gae = delta + gamma * lam * gae. The
advantage of the last steps before the pole falls is inflated with the
advantages of the *next* episode, so the actions that led to failure look good.
Training runs without error, but the policy improves much less.

Source: https://github.com/vietnh1009/Super-mario-bros-PPO-pytorch/issues/21
"""

import math

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)
np.random.seed(0)


class CartPole:
    def __init__(self, seed=0):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.s = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.s.astype(np.float32)

    def step(self, a):
        x, xd, th, thd = self.s
        force = 10.0 if a == 1 else -10.0
        ct, st = math.cos(th), math.sin(th)
        temp = (force + 0.05 * thd * thd * st) / 1.1
        thacc = (9.8 * st - ct * temp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1))
        xacc = temp - 0.05 * thacc * ct / 1.1
        x, xd = x + 0.02 * xd, xd + 0.02 * xacc
        th, thd = th + 0.02 * thd, thd + 0.02 * thacc
        self.s = np.array([x, xd, th, thd])
        self.t += 1
        done = abs(x) > 2.4 or abs(th) > 0.2095 or self.t >= 200
        return self.s.astype(np.float32), 1.0, done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))
        self.critic = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, s):
        return torch.distributions.Categorical(logits=self.actor(s)), self.critic(s).squeeze(-1)


env = CartPole(seed=0)
model = ActorCritic()
opt = torch.optim.Adam(model.parameters(), lr=2.5e-3)
T, EPOCHS, MB, GAMMA, LAM, CLIP = 512, 4, 128, 0.99, 0.95, 0.2
obs = env.reset()
ep_len, finished = 0, []

for it in range(20):
    buf_s, buf_a, buf_lp, buf_r, buf_d, buf_v = [], [], [], [], [], []
    for _ in range(T):
        s_t = torch.from_numpy(obs)
        with torch.no_grad():
            dist, v = model(s_t)
            a = dist.sample()
        nxt, r, done = env.step(int(a))
        buf_s.append(s_t)
        buf_a.append(a)
        buf_lp.append(dist.log_prob(a))
        buf_r.append(r)
        buf_d.append(float(done))
        buf_v.append(v)
        ep_len += 1
        if done:
            finished.append(ep_len)
            ep_len = 0
            nxt = env.reset()
        obs = nxt
    with torch.no_grad():
        _, last_v = model(torch.from_numpy(obs))

    values = torch.stack(buf_v)
    advantages = torch.zeros(T)
    gae = 0.0
    for t in reversed(range(T)):
        next_v = last_v if t == T - 1 else values[t + 1]
        mask = 1.0 - buf_d[t]
        delta = buf_r[t] + GAMMA * next_v * mask - values[t]
        gae = delta + GAMMA * LAM * gae  # BUG-LINE
        advantages[t] = gae
    returns = advantages + values

    states, actions, old_lp = torch.stack(buf_s), torch.stack(buf_a), torch.stack(buf_lp)
    for _ in range(EPOCHS):
        perm = torch.randperm(T)
        for start in range(0, T, MB):
            idx = perm[start : start + MB]
            dist, v = model(states[idx])
            adv = advantages[idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            ratio = torch.exp(dist.log_prob(actions[idx]) - old_lp[idx])
            pg_loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - CLIP, 1 + CLIP) * adv).mean()
            v_loss = 0.5 * (v - returns[idx]).pow(2).mean()
            loss = pg_loss + 0.5 * v_loss - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()

    if it % 4 == 0 or it == 19:
        recent = np.mean(finished[-10:]) if finished else 0.0
        print(f"iter {it:2d}  pg {pg_loss.item():+.4f}  v {v_loss.item():8.3f}  recent episode length {recent:6.1f}")
