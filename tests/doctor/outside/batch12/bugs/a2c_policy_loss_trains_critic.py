"""Advantage actor-critic on a synthetic contextual task: separate actor and critic MLPs share one Adam optimizer, the actor is trained with log-prob times advantage and the critic with a squared error to Monte-Carlo returns. The advantage is computed from the critic's value without cutting the graph, so the policy-gradient term also back-propagates into the critic: the critic gets pushed to change its values to make the actor loss smaller instead of only regressing the returns. Training runs normally and both losses are printed as usual; the mixed gradient is present from the first step.
Source: https://github.com/SwarmRL/SwarmRL/pull/99
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
B, OBS, ACT = 256, 8, 4
w_true = torch.randn(OBS, ACT)

actor = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, ACT))
critic = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=3e-3)

for step in range(30):
    obs = torch.randn(B, OBS)
    dist = torch.distributions.Categorical(logits=actor(obs))
    act = dist.sample()
    returns = (obs @ w_true).gather(1, act[:, None]).squeeze(1) + 0.1 * torch.randn(B)
    values = critic(obs).squeeze(1)
    advantage = returns - values  # BUG-LINE
    policy_loss = -(dist.log_prob(act) * advantage).mean()
    value_loss = 0.5 * (returns - values).pow(2).mean()
    entropy = dist.entropy().mean()
    loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} policy {policy_loss.item():.4f} value {value_loss.item():.4f}")

print("critic checksum", round(sum(p.sum().item() for p in critic.parameters()), 6))
