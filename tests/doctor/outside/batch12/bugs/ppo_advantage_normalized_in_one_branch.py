"""PPO with the clipped surrogate objective on a synthetic bandit-like task with rollouts stored once and several optimisation epochs over minibatches. Advantages are meant to be normalised (zero mean, unit std per minibatch) before both surrogate terms are formed; here the unclipped term is built from the raw advantage and only the clipped term uses the normalised one, so min(surr1, surr2) compares quantities on different scales and the clipping decision is meaningless. No error or warning; the loss is a plausible number from the first update.
Source: https://github.com/pytorch/rl/pull/1033
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
N, OBS, ACT, CLIP = 1024, 6, 3, 0.2
w_true = torch.randn(OBS, ACT) * 3.0 + 2.0

policy = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, ACT))
optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)

obs = torch.randn(N, OBS)
with torch.no_grad():
    dist = torch.distributions.Categorical(logits=policy(obs))
    actions = dist.sample()
    old_logp = dist.log_prob(actions)
    rewards = (obs @ w_true).gather(1, actions[:, None]).squeeze(1) + 5.0
    advantages = rewards - rewards.mean() * 0.5

step = 0
for epoch in range(3):
    perm = torch.randperm(N)
    for i in range(0, N, 256):
        idx = perm[i : i + 256]
        d = torch.distributions.Categorical(logits=policy(obs[idx]))
        logp = d.log_prob(actions[idx])
        ratio = torch.exp(logp - old_logp[idx])
        adv = advantages[idx]
        adv_n = (adv - adv.mean()) / (adv.std() + 1e-8)
        surr1 = ratio * adv  # BUG-LINE
        surr2 = torch.clamp(ratio, 1 - CLIP, 1 + CLIP) * adv_n
        loss = -torch.min(surr1, surr2).mean() - 0.01 * d.entropy().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        clipfrac = ((ratio - 1).abs() > CLIP).float().mean().item()
        print(f"step {step} loss {loss.item():.4f} clipfrac {clipfrac:.3f}")
        step += 1

with torch.no_grad():
    print("checksum", round(sum(p.sum().item() for p in policy.parameters()), 6))
