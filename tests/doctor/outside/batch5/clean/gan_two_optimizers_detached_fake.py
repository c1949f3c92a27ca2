"""A GAN trained with two optimizers: the discriminator step uses ``fake.detach()`` so no gradient reaches the
generator, and the generator step re-scores the same fake batch through the discriminator, whose gradients are
cleared before its next update. Two optimizers and unused gradients on D during the G step are intended.

Source: https://github.com/pytorch/examples/blob/main/dcgan/main.py
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
for _step in range(5):
    real = torch.randn(32, 2) * 0.5 + 2
    fake = G(torch.randn(32, 8))
    d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(32, 1)) + F.binary_cross_entropy_with_logits(
        D(fake.detach()), torch.zeros(32, 1)
    )
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(32, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
