"""A small GAN learning a 1-D bimodal distribution with separate Adam optimizers for generator and discriminator and the usual alternating updates (D on real vs detached fake, then G with the non-saturating loss). In the generator phase the step is taken with the discriminator's optimizer instead of the generator's: the generator's gradients are computed and then discarded by the next zero_grad, so G never changes, while D receives an extra update in the direction that helps the generator. Both losses are printed and move, so the run looks alive; the generator is frozen from the first iteration.
Source: https://github.com/ufal/npfl138/issues/57
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
NZ, B = 4, 128


def real_batch(n):
    comp = torch.randint(0, 2, (n, 1)).float()
    return comp * (2.0 + 0.3 * torch.randn(n, 1)) + (1 - comp) * (-2.0 + 0.3 * torch.randn(n, 1))


G = nn.Sequential(nn.Linear(NZ, 32), nn.ReLU(), nn.Linear(32, 1))
D = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
ones, zeros = torch.ones(B, 1), torch.zeros(B, 1)

for it in range(40):
    real = real_batch(B)
    fake = G(torch.randn(B, NZ))
    d_loss = F.binary_cross_entropy_with_logits(D(real), ones) + F.binary_cross_entropy_with_logits(
        D(fake.detach()), zeros
    )
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()

    g_loss = F.binary_cross_entropy_with_logits(D(fake), ones)
    opt_g.zero_grad()
    g_loss.backward()
    opt_d.step()  # BUG-LINE
    if it % 5 == 0:
        print(f"it {it} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")

with torch.no_grad():
    s = G(torch.randn(2000, NZ))
    print("generated mean/std", round(s.mean().item(), 4), round(s.std().item(), 4))
