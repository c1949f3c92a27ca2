"""A GAN whose discriminator update calls the generator's optimizer: ``d_optimizer`` is built over the
discriminator but never stepped; the discriminator's gradients are computed and thrown away, and the generator is
stepped twice per iteration (the second time on the gradients the discriminator loss left in it). The
discriminator stays at its initial weights; the losses still move.

Source: https://github.com/Lornatang/SRGAN-PyTorch/issues/85
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
g_optimizer = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
d_optimizer = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
real_data = torch.randn(512, 2) * 0.5 + torch.tensor([2.0, -1.0])
for i in range(0, 512, 64):
    real = real_data[i : i + 64]
    fake = G(torch.randn(64, 4))
    # discriminator
    d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(64, 1)) + F.binary_cross_entropy_with_logits(
        D(fake.detach()), torch.zeros(64, 1)
    )
    d_optimizer.zero_grad()
    d_loss.backward()
    g_optimizer.step()  # BUG-LINE
    # generator
    g_loss = F.binary_cross_entropy_with_logits(D(G(torch.randn(64, 4))), torch.ones(64, 1))
    g_optimizer.zero_grad()
    g_loss.backward()
    g_optimizer.step()
