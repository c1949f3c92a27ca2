"""Q-learning: the target network is evaluated under no_grad and synced by copying weights.

Source: https://github.com/sunwuzhou03/reinforcement-learning-lab/issues/1
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)

q = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
target = copy.deepcopy(q)
opt = torch.optim.Adam(q.parameters(), lr=1e-3)
s, a, r, s2 = torch.randn(32, 4), torch.randint(0, 2, (32, 1)), torch.randn(32, 1), torch.randn(32, 4)
for step in range(3):
    with torch.no_grad():
        y = r + 0.99 * target(s2).max(1, keepdim=True).values
    opt.zero_grad()
    loss = F.smooth_l1_loss(q(s).gather(1, a), y)
    loss.backward()
    opt.step()
    if step % 2 == 1:
        target.load_state_dict(q.state_dict())
