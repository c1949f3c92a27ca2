"""PPO on a synthetic contextual-bandit style task with separate actor and critic networks and two optimizers: a fixed batch of rollouts is collected once (old log-probs and old values stored detached), then several epochs of shuffled minibatches update the actor with the clipped surrogate (advantages normalised per minibatch, used in both surrogate terms) and the critic with a PPO-style clipped value loss; the two losses are backpropagated separately and each optimizer steps only its own network. An approximate-KL early-stop check is included. Unusual but correct: two optimizers, two backward passes per minibatch, and a ratio of exactly 1 on the first minibatch by construction.
Source: https://spinningup.openai.com/en/latest/algorithms/ppo.html
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
N, OBS, ACT, CLIP = 1024, 6, 3, 0.2
w_true = torch.randn(OBS, ACT)
actor = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, ACT))
critic = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, 1))
opt_pi = torch.optim.Adam(actor.parameters(), lr=3e-3)
opt_v = torch.optim.Adam(critic.parameters(), lr=1e-2)

obs = torch.randn(N, OBS)
with torch.no_grad():
    dist = torch.distributions.Categorical(logits=actor(obs))
    acts = dist.sample()
    old_logp = dist.log_prob(acts)
    old_v = critic(obs).squeeze(1)
    rets = (obs @ w_true).gather(1, acts[:, None]).squeeze(1) + 0.1 * torch.randn(N)
    adv_all = rets - old_v

step = 0
for epoch in range(3):
    perm = torch.randperm(N)
    for i in range(0, N, 256):
        idx = perm[i : i + 256]
        d = torch.distributions.Categorical(logits=actor(obs[idx]))
        logp = d.log_prob(acts[idx])
        ratio = torch.exp(logp - old_logp[idx])
        adv = adv_all[idx]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pi_loss = (
            -torch.min(ratio * adv, torch.clamp(ratio, 1 - CLIP, 1 + CLIP) * adv).mean() - 0.01 * d.entropy().mean()
        )
        opt_pi.zero_grad()
        pi_loss.backward()
        opt_pi.step()

        v = critic(obs[idx]).squeeze(1)
        v_clip = old_v[idx] + torch.clamp(v - old_v[idx], -CLIP, CLIP)
        v_loss = 0.5 * torch.max((v - rets[idx]).pow(2), (v_clip - rets[idx]).pow(2)).mean()
        opt_v.zero_grad()
        v_loss.backward()
        opt_v.step()
        approx_kl = (old_logp[idx] - logp).mean().item()
        print(f"step {step} pi_loss {pi_loss.item():.4f} v_loss {v_loss.item():.4f} kl {approx_kl:.5f}")
        step += 1
    if approx_kl > 0.05:
        break
