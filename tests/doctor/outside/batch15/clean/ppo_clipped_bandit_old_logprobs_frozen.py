"""PPO with the clipped surrogate on a contextual bandit, several epochs per rollout.

Source: https://github.com/sidhantls/ppo_lightning/issues/3

The thread explains the difference between logp and logp_old in PPO: logp_old is the
log-probability under the policy that collected the batch and is fixed, while logp
is recomputed by the policy being updated over several gradient steps on the same
batch, so the ratio starts at 1 and moves away from it. This program does that
correctly: old log-probs and values are recorded under torch.no_grad() at rollout
time (they are constants), the same rollout is reused for 4 epochs of shuffled
minibatches, and the ratio exp(logp - logp_old) is clipped. Advantages are normalized
per rollout and detached; the value head is trained on the observed rewards.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

OBS, ACT = 8, 4
W_true = torch.randn(OBS, ACT)


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh())
        self.logits = nn.Linear(64, ACT)
        self.value = nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return self.logits(h), self.value(h).squeeze(-1)


pol = Policy()
opt = torch.optim.Adam(pol.parameters(), lr=3e-3)
CLIP = 0.2

for it in range(1, 41):
    obs = torch.randn(256, OBS)
    with torch.no_grad():
        logits, values = pol(obs)
        dist = torch.distributions.Categorical(logits=logits)
        actions = dist.sample()
        old_logp = dist.log_prob(actions)
        rewards = (actions == (obs @ W_true).argmax(1)).float()
        adv = rewards - values
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    for epoch in range(4):
        perm = torch.randperm(256)
        for mb in perm.split(64):
            logits, v = pol(obs[mb])
            dist = torch.distributions.Categorical(logits=logits)
            logp = dist.log_prob(actions[mb])
            ratio = torch.exp(logp - old_logp[mb])
            surr1 = ratio * adv[mb]
            surr2 = torch.clamp(ratio, 1 - CLIP, 1 + CLIP) * adv[mb]
            pg_loss = -torch.min(surr1, surr2).mean()
            v_loss = F.mse_loss(v, rewards[mb])
            loss = pg_loss + 0.5 * v_loss - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    if it % 5 == 0:
        print(
            f"iter {it} mean_reward {rewards.mean().item():.3f} loss {loss.item():.4f} ratio_max {ratio.max().item():.3f}"
        )
