"""A GAN trained with two separate optimizers. The discriminator step uses
fake.detach() so no gradient reaches the generator, and the generator step
backpropagates through the discriminator but only the generator's optimizer
steps; the discriminator's stray gradients are cleared by its zero_grad at the
next iteration. Two optimizers, a detach and a second backward through D are all
intentional here.

Source: https://arxiv.org/abs/1406.2661
"""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for _step in range(6):
    real = torch.randn(64, 2) * 0.5 + torch.tensor([2.0, -1.0])
    fake = G(torch.randn(64, 8))
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(64, 1)) + bce(D(fake.detach()), torch.zeros(64, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(64, 1))
    g_loss.backward()
    opt_g.step()
print("d", d_loss.item(), "g", g_loss.item())
