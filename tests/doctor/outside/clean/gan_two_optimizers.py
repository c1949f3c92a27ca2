"""A GAN with one optimizer each for G and D, both zeroed every step; D's loss uses fake.detach().

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6339
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g, opt_d = torch.optim.Adam(G.parameters(), lr=2e-4), torch.optim.Adam(D.parameters(), lr=2e-4)
real = torch.randn(32, 2) + 3
for _step in range(3):
    fake = G(torch.randn(32, 4))
    opt_d.zero_grad()
    d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(32, 1)) + F.binary_cross_entropy_with_logits(
        D(fake.detach()), torch.zeros(32, 1)
    )
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(32, 1))
    g_loss.backward()
    opt_g.step()
