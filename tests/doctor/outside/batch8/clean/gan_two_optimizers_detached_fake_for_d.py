"""GAN with separate generator/discriminator optimizers and detach() only in the D step.

The discriminator update uses fake.detach() so no gradient reaches G; the
generator update passes the non-detached fake through D so G receives the
adversarial gradient.  D's gradients from the G step are discarded by
opt_d.zero_grad() before the next D update.
Source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/388
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)

for _step in range(8):
    real = torch.randn(64, 2) * 0.5 + torch.tensor([2.0, -1.0])
    fake = G(torch.randn(64, 8))
    opt_d.zero_grad()
    d_loss = 0.5 * (bce(D(real), ones) + bce(D(fake.detach()), zeros))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(fake), ones)
    g_loss.backward()
    opt_g.step()
print(f"d_loss {d_loss.item():.3f} g_loss {g_loss.item():.3f}")
