"""In the generator update the discriminator's prediction on the fake sample is
detached before the adversarial loss is computed. The adversarial term then has
no gradient path to the generator, so the generator is trained only by its
reconstruction loss and the GAN part of the objective silently does nothing.

Source: https://github.com/wangle53/CSA-CDGAN/issues/5
"""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for _step in range(6):
    inp = torch.randn(32, 16)
    real = inp.flip(1) + 0.1 * torch.randn(32, 16)
    fake = G(inp)
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    pred_fake = D(fake).detach()  # BUG-LINE
    adv = bce(pred_fake, torch.ones(32, 1))
    rec = nn.functional.l1_loss(fake, real)
    g_loss = adv + 10 * rec
    g_loss.backward()
    opt_g.step()
print("d", d_loss.item(), "g", g_loss.item())
