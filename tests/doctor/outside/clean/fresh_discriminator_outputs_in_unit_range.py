"""A discriminator whose last layer starts near zero with bias 0.5: every logit is in [0, 1] at first, and they are
logits.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6339
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
D = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
with torch.no_grad():
    D[2].weight.mul_(0.01)
    D[2].bias.fill_(0.5)
opt = torch.optim.Adam(D.parameters(), lr=1e-3)
real, fake = torch.randn(32, 2) + 2, torch.randn(32, 2)
for _step in range(3):
    opt.zero_grad()
    loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(32, 1)) + F.binary_cross_entropy_with_logits(
        D(fake), torch.zeros(32, 1)
    )
    loss.backward()
    opt.step()
