"""Generator's adversarial loss is computed on a detached fake sample.

In the generator update the fake batch goes through the discriminator as
fake.detach(), so the adversarial term carries no gradient back to the
generator; only the reconstruction term trains it and the adversarial
objective is silently dropped.
Source: https://github.com/samet-akcay/skip-ganomaly/issues/5
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4)
bce = nn.BCEWithLogitsLoss()

for _step in range(6):
    real = torch.randn(32, 16) + 2.0
    fake = G(real)
    # discriminator step
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    d_loss.backward()
    opt_d.step()
    # generator step: adversarial + reconstruction
    opt_g.zero_grad()
    adv = bce(D(fake.detach()), torch.ones(32, 1))  # BUG-LINE
    rec = nn.functional.l1_loss(fake, real)
    g_loss = adv + 10 * rec
    g_loss.backward()
    opt_g.step()
print(f"d {d_loss.item():.3f} g {g_loss.item():.3f}")
