"""An actor-critic trainer computes the policy-gradient term with ``(reward - value) * log_prob`` where ``value``
comes from the critic and is not detached. The critic therefore also receives the actor's gradient, which pushes
its estimates in whatever direction lowers the policy loss instead of towards the returns.

Source: https://github.com/astariul/encode-attend-navigate-pytorch/issues/2
"""

import torch
from torch import nn

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 3))
critic = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=1e-3)
for _step in range(6):
    state = torch.randn(32, 6)
    dist = torch.distributions.Categorical(logits=actor(state))
    action = dist.sample()
    reward = (action == state[:, :3].argmax(1)).float()
    value = critic(state).squeeze(1)
    advantage = reward - value  # BUG-LINE
    actor_loss = -(advantage * dist.log_prob(action)).mean()
    critic_loss = (reward - value).pow(2).mean()
    opt.zero_grad()
    (actor_loss + critic_loss).backward()
    opt.step()
