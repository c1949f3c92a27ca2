"""In the generator update of a GAN the fake sample is passed to the discriminator as ``fake.detach()`` (copied
from the discriminator step). The adversarial loss therefore has no path back to the generator: the generator
only receives gradient from its small auxiliary L1 term, and the adversarial signal is silently lost while
both losses are logged as usual.

Source: https://github.com/nikhilsinghmus/image2reverb/issues/37
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4)
real_data = torch.randn(160, 16) * 0.5 + 1.0
cond = torch.randn(160, 8)

for i in range(0, 160, 32):
    real, z = real_data[i : i + 32], cond[i : i + 32]
    fake = G(z)
    # discriminator step
    d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(32, 1)) + F.binary_cross_entropy_with_logits(
        D(fake.detach()), torch.zeros(32, 1)
    )
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    # generator step
    d_fake = D(fake.detach())  # BUG-LINE
    g_adv = F.binary_cross_entropy_with_logits(d_fake, torch.ones(32, 1))
    g_loss = g_adv + 0.01 * F.l1_loss(fake, real)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
