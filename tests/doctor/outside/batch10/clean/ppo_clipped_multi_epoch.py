"""Proximal Policy Optimization on a 1-D corridor task. Each iteration collects a rollout with the current
policy, stores the old log-probabilities and values as detached tensors, computes GAE advantages (normalised
per batch) and returns, then runs several epochs of minibatch updates on the same data with the clipped
surrogate objective, a value loss and an entropy bonus. Reusing one rollout for several optimizer steps and
the ratio exp(new_logp - old_logp) are the intended PPO design, not a stale-data bug.
Source: https://arxiv.org/abs/1707.06347
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
L, GAMMA, LAM, CLIP = 9, 0.97, 0.95, 0.2


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(L, 64), nn.Tanh())
        self.pi = nn.Linear(64, 2)
        self.v = nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return self.pi(h), self.v(h).squeeze(-1)


net = Policy()
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
for it in range(15):
    obs, acts, logps, vals, rews, dones = [], [], [], [], [], []
    s, steps = L // 2, 0
    with torch.no_grad():
        for _ in range(128):
            o = F.one_hot(torch.tensor(s), L).float()
            logits, v = net(o)
            dist = torch.distributions.Categorical(logits=logits)
            a = dist.sample()
            s += 1 if a.item() == 1 else -1
            steps += 1
            r = 1.0 if s == L - 1 else (-1.0 if s == 0 else -0.01)
            done = s in (0, L - 1) or steps >= 30
            obs.append(o)
            acts.append(a)
            logps.append(dist.log_prob(a))
            vals.append(v)
            rews.append(r)
            dones.append(float(done))
            if done:
                s, steps = L // 2, 0
    obs, acts, old_logp = torch.stack(obs), torch.stack(acts), torch.stack(logps)
    vals, rews, dones = torch.stack(vals), torch.tensor(rews), torch.tensor(dones)
    adv, gae = torch.zeros(128), 0.0
    for t in reversed(range(128)):
        nv = 0.0 if t == 127 else vals[t + 1]
        delta = rews[t] + GAMMA * nv * (1 - dones[t]) - vals[t]
        gae = delta + GAMMA * LAM * (1 - dones[t]) * gae
        adv[t] = gae
    returns = adv + vals
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    for epoch in range(4):
        for idx in torch.randperm(128).split(32):
            logits, v = net(obs[idx])
            dist = torch.distributions.Categorical(logits=logits)
            ratio = torch.exp(dist.log_prob(acts[idx]) - old_logp[idx])
            surr = torch.min(ratio * adv[idx], ratio.clamp(1 - CLIP, 1 + CLIP) * adv[idx])
            loss = -surr.mean() + 0.5 * F.mse_loss(v, returns[idx]) - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
    if it % 5 == 0:
        print(f"iter {it} mean reward {rews.mean().item():.4f} loss {loss.item():.4f}")
with torch.no_grad():
    print(
        "P(right|s):",
        [round(F.softmax(net(F.one_hot(torch.tensor(i), L).float())[0], -1)[1].item(), 3) for i in range(1, L - 1)],
    )
