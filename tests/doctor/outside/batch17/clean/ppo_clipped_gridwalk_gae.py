"""PPO (clipped surrogate, GAE) on a vectorised 1-D walk-to-goal environment.

Clean program. Unusual on purpose: rollouts are collected under no_grad and the stored
old log-probabilities, values, advantages and returns are constants; the same rollout
batch is reused for 4 epochs of shuffled minibatch updates, so the probability ratio
exp(logp_new - logp_old) starts at exactly 1 and is clipped to [0.8, 1.2]; advantages are
normalised per batch; the actor and critic share a trunk and are trained with one
combined loss (policy + 0.5 * value - 0.01 * entropy) and gradient-norm clipping. The
report's PPO update detaches old log-probs and state values in the same way.

Source: https://github.com/henrycharlesworth/big2_PPOalgorithm/issues/9
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_ENVS, HORIZON, GAMMA, LAM = 16, 32, 0.97, 0.95
SIZE = 9  # positions 0..8, goal at 8


class Walk:
    def __init__(self):
        self.pos = torch.randint(0, 4, (N_ENVS,))

    def obs(self):
        return F.one_hot(self.pos, SIZE).float()

    def step(self, action):  # 0 left, 1 stay, 2 right
        self.pos = (self.pos + action - 1).clamp(0, SIZE - 1)
        done = self.pos == SIZE - 1
        reward = torch.where(done, torch.tensor(1.0), torch.tensor(-0.02))
        self.pos = torch.where(done, torch.randint(0, 4, (N_ENVS,)), self.pos)
        return reward, done.float()


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(SIZE, 64), nn.Tanh())
        self.pi = nn.Linear(64, 3)
        self.v = nn.Linear(64, 1)

    def forward(self, x):
        h = self.trunk(x)
        return torch.distributions.Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)


env, ac = Walk(), ActorCritic()
opt = torch.optim.Adam(ac.parameters(), lr=3e-3)

for it in range(25):
    obs_b, act_b, logp_b, val_b, rew_b, done_b = [], [], [], [], [], []
    with torch.no_grad():
        for _ in range(HORIZON):
            o = env.obs()
            dist, v = ac(o)
            a = dist.sample()
            r, d = env.step(a)
            obs_b.append(o)
            act_b.append(a)
            logp_b.append(dist.log_prob(a))
            val_b.append(v)
            rew_b.append(r)
            done_b.append(d)
        _, last_v = ac(env.obs())
        adv = torch.zeros(HORIZON, N_ENVS)
        gae = torch.zeros(N_ENVS)
        for t in reversed(range(HORIZON)):
            nxt = last_v if t == HORIZON - 1 else val_b[t + 1]
            delta = rew_b[t] + GAMMA * nxt * (1 - done_b[t]) - val_b[t]
            gae = delta + GAMMA * LAM * (1 - done_b[t]) * gae
            adv[t] = gae
        ret = adv + torch.stack(val_b)
    obs = torch.stack(obs_b).flatten(0, 1)
    act = torch.stack(act_b).flatten()
    old_logp = torch.stack(logp_b).flatten()
    adv_f, ret_f = adv.flatten(), ret.flatten()
    adv_f = (adv_f - adv_f.mean()) / (adv_f.std() + 1e-8)

    for epoch in range(4):
        perm = torch.randperm(obs.size(0))
        for mb in perm.split(128):
            dist, v = ac(obs[mb])
            ratio = torch.exp(dist.log_prob(act[mb]) - old_logp[mb])
            s1 = ratio * adv_f[mb]
            s2 = torch.clamp(ratio, 0.8, 1.2) * adv_f[mb]
            loss = -torch.min(s1, s2).mean() + 0.5 * F.mse_loss(v, ret_f[mb]) - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(ac.parameters(), 0.5)
            opt.step()
    if it % 5 == 0 or it == 24:
        goals = torch.stack(done_b).sum().item()
        print(
            f"iter {it:2d}  goals reached in rollout {goals:4.0f}  mean reward {torch.stack(rew_b).mean().item():+.4f}  "
            f"loss {loss.item():.4f}"
        )
