"""REINFORCE with a learned baseline where log-probs [N] meet advantages [N, 1].

Source: https://github.com/pytorch/rl/issues/1243

The report: the sample log-probability has shape [N] while the advantage and value
tensors have shape [N, 1], so log_prob * advantage broadcasts to an [N, N] matrix and
the mean over it is not the REINFORCE estimator: every log-probability gets
multiplied by the batch-average advantage instead of its own. Nothing errors; with
a per-sample baseline the average advantage is near zero, so the policy barely
improves while the value loss looks healthy.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

OBS, ACT = 8, 4
W_true = torch.randn(OBS, ACT)

policy = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, ACT))
value = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=3e-3)

for it in range(1, 301):
    obs = torch.randn(128, OBS)
    dist = torch.distributions.Categorical(logits=policy(obs))
    actions = dist.sample()
    log_prob = dist.log_prob(actions)
    reward = (actions == (obs @ W_true).argmax(1)).float().unsqueeze(1)
    v = value(obs)
    advantage = (reward - v).detach()
    policy_loss = -(log_prob * advantage).mean()  # BUG-LINE
    value_loss = F.mse_loss(v, reward)
    loss = policy_loss + 0.5 * value_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 50 == 0:
        print(f"iter {it} mean reward {reward.mean().item():.3f} value loss {value_loss.item():.4f}")
