"""Soft actor-critic on a 1-D continuous "reach the goal" task (state = position and goal, action in
[-1, 1] moves the point, reward = -distance). It uses the full modern SAC recipe: a tanh-squashed
Gaussian policy with the log-probability correction, twin Q networks trained against the minimum of
two Polyak-averaged target critics, and automatic entropy tuning with a learnable log-alpha that has
its own optimiser. Three optimisers and three backward passes run per step; targets are computed
under no_grad, the actor loss uses the live critics but only the actor optimiser steps on it, and
critic gradients produced by the actor loss are cleared before the next critic update.

Source: https://arxiv.org/abs/1812.05905
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
GAMMA, TAU = 0.95, 0.02


def mlp(i, o):
    return nn.Sequential(nn.Linear(i, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, o))


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(2, 2)

    def forward(self, s):
        mu, log_std = self.net(s).chunk(2, -1)
        std = log_std.clamp(-5, 2).exp()
        u = mu + std * torch.randn_like(mu)
        a = torch.tanh(u)
        logp = torch.distributions.Normal(mu, std).log_prob(u) - torch.log(1 - a.pow(2) + 1e-6)
        return a, logp.sum(-1)


actor, q1, q2 = Actor(), mlp(3, 1), mlp(3, 1)
q1_t, q2_t = copy.deepcopy(q1), copy.deepcopy(q2)
for p in list(q1_t.parameters()) + list(q2_t.parameters()):
    p.requires_grad_(False)
log_alpha = torch.zeros(1, requires_grad=True)
target_entropy = -1.0
opt_a = torch.optim.Adam(actor.parameters(), lr=1e-3)
opt_q = torch.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=1e-3)
opt_alpha = torch.optim.Adam([log_alpha], lr=1e-3)


def env_step(s, a):
    pos = (s[:, :1] + 0.3 * a).clamp(-2, 2)
    s2 = torch.cat([pos, s[:, 1:]], 1)
    return s2, -(pos - s[:, 1:]).abs().squeeze(1)


buf_s, buf_a, buf_r, buf_s2 = [], [], [], []
s = torch.cat([torch.rand(32, 1) * 4 - 2, torch.rand(32, 1) * 4 - 2], 1)
for it in range(80):
    with torch.no_grad():
        a, _ = actor(s)
    s2, r = env_step(s, a)
    buf_s.append(s)
    buf_a.append(a)
    buf_r.append(r)
    buf_s2.append(s2)
    s = s2 if it % 10 else torch.cat([torch.rand(32, 1) * 4 - 2, torch.rand(32, 1) * 4 - 2], 1)
    S, A, R, S2 = (torch.cat(b[-50:]) for b in (buf_s, buf_a, buf_r, buf_s2))
    idx = torch.randint(0, S.size(0), (128,))
    S, A, R, S2 = S[idx], A[idx], R[idx], S2[idx]
    alpha = log_alpha.exp().detach()
    with torch.no_grad():
        a2, logp2 = actor(S2)
        sa2 = torch.cat([S2, a2], 1)
        target = R + GAMMA * (torch.min(q1_t(sa2), q2_t(sa2)).squeeze(1) - alpha * logp2)
    sa = torch.cat([S, A], 1)
    q_loss = F.mse_loss(q1(sa).squeeze(1), target) + F.mse_loss(q2(sa).squeeze(1), target)
    opt_q.zero_grad()
    q_loss.backward()
    opt_q.step()
    a_new, logp = actor(S)
    san = torch.cat([S, a_new], 1)
    actor_loss = (alpha * logp - torch.min(q1(san), q2(san)).squeeze(1)).mean()
    opt_a.zero_grad()
    actor_loss.backward()
    opt_a.step()
    alpha_loss = -(log_alpha * (logp.detach() + target_entropy)).mean()
    opt_alpha.zero_grad()
    alpha_loss.backward()
    opt_alpha.step()
    with torch.no_grad():
        for net, tgt in ((q1, q1_t), (q2, q2_t)):
            for p, pt in zip(net.parameters(), tgt.parameters()):
                pt.mul_(1 - TAU).add_(TAU * p)
print(
    "q_loss",
    round(q_loss.item(), 4),
    "actor_loss",
    round(actor_loss.item(), 4),
    "alpha",
    round(log_alpha.exp().item(), 4),
)
