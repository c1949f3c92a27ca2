"""A critic outputs (N, 1) while the TD target is (N, 4): the loss broadcasts silently.

Source: https://github.com/sunwuzhou03/reinforcement-learning-lab/issues/1
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(critic.parameters(), lr=3e-4)
states, rewards = torch.randn(64, 6), torch.randn(64, 4)
for _step in range(3):
    opt.zero_grad()
    td_target = rewards + 0.99 * critic(states).detach()
    loss = F.smooth_l1_loss(critic(states), td_target)  # BUG-LINE
    loss.backward()
    opt.step()
