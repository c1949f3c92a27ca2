"""Train an advantage actor-critic agent on a 2-armed contextual bandit-with-transitions (a 6-state
random-walk chain where the action chooses the drift) using one-step TD targets. The critic's
bootstrap target r + gamma * V(s') is built from the critic's own output without detach(), so the
critic loss also pushes V(s') towards V(s) (a residual-gradient update rather than the
semi-gradient TD(0) the algorithm prescribes), and the advantage used by the actor changes
accordingly. Nothing errors and the losses decrease.

Source: https://github.com/datawhalechina/easy-rl/pull/117
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
NS, GAMMA = 6, 0.9


def env_step(s, a):
    move = torch.where(torch.rand(s.shape) < 0.8, 2 * a - 1, 1 - 2 * a)
    s2 = (s + move).clamp(0, NS - 1)
    r = (s2 == NS - 1).float()
    done = (s2 == NS - 1) | (s2 == 0)
    return s2, r, done


actor = nn.Sequential(nn.Linear(NS, 32), nn.Tanh(), nn.Linear(32, 2))
critic = nn.Sequential(nn.Linear(NS, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=5e-3)
s = torch.full((64,), NS // 2)
for it in range(200):
    obs = F.one_hot(s, NS).float()
    dist = torch.distributions.Categorical(logits=actor(obs))
    a = dist.sample()
    s2, r, done = env_step(s, a)
    v = critic(obs).squeeze(1)
    v_next = critic(F.one_hot(s2, NS).float()).squeeze(1)
    td_target = r + GAMMA * (1 - done.float()) * v_next  # BUG-LINE
    advantage = td_target - v
    critic_loss = advantage.pow(2).mean()
    actor_loss = -(dist.log_prob(a) * advantage.detach()).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    (actor_loss + 0.5 * critic_loss).backward()
    opt.step()
    s = torch.where(done, torch.full_like(s, NS // 2), s2)
with torch.no_grad():
    V = critic(torch.eye(NS)).squeeze(1)
    p_right = actor(torch.eye(NS)).softmax(1)[:, 1]
print("final critic loss", round(critic_loss.item(), 5))
print("V:", [round(x, 3) for x in V.tolist()])
print("P(right):", [round(x, 3) for x in p_right.tolist()])
