"""Deterministic actor-critic (DDPG-style) on a 1-step continuous bandit, with the
actor loss backpropagated into the critic.

Source: https://github.com/watchernyu/REDQ/pull/3

The report: after restructuring the update so that critic and actor losses are
computed together, the gradient of the policy loss -Q(s, pi(s)) also landed in the Q
network's .grad, and the critic optimizer applied it. The critic is then trained to
raise its own estimate at the actor's actions in addition to fitting the rewards,
biasing Q upward where the actor goes. No error is raised; the critic loss still
goes down and the run looks fine.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

OBS = 4
w = torch.randn(OBS)


def reward_fn(s, a):
    best = torch.tanh(s @ w).unsqueeze(1)
    return -(a - best).pow(2).squeeze(1)


actor = nn.Sequential(nn.Linear(OBS, 64), nn.ReLU(), nn.Linear(64, 1), nn.Tanh())
critic = nn.Sequential(nn.Linear(OBS + 1, 64), nn.ReLU(), nn.Linear(64, 1))
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)

for step in range(1, 501):
    s = torch.randn(128, OBS)
    with torch.no_grad():
        a = (actor(s) + 0.3 * torch.randn(128, 1)).clamp(-1, 1)
    r = reward_fn(s, a)
    q = critic(torch.cat([s, a], 1)).squeeze(1)
    critic_loss = F.mse_loss(q, r)
    actor_loss = -critic(torch.cat([s, actor(s)], 1)).mean()
    critic_opt.zero_grad()
    actor_opt.zero_grad()
    (critic_loss + actor_loss).backward()  # BUG-LINE
    critic_opt.step()
    actor_opt.step()
    if step % 100 == 0:
        with torch.no_grad():
            true_r = reward_fn(s, actor(s)).mean().item()
            q_pi = critic(torch.cat([s, actor(s)], 1)).mean().item()
        print(f"step {step} critic loss {critic_loss.item():.4f} Q(s,pi) {q_pi:.3f} true reward {true_r:.3f}")
