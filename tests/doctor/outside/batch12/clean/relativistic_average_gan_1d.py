"""Relativistic average GAN (RaGAN) on a 1-D bimodal distribution: the discriminator's logits for real samples are compared with the mean logit of fake samples and vice versa, so the generator loss also depends on the discriminator's outputs for real data, with the targets swapped. D is updated on detached fakes; G is then updated with a freshly computed D(real) (which carries no generator gradient) and D(fake); the generator phase calls D without stepping D's optimizer and D's stale gradients are cleared by its own zero_grad. Unusual but correct: the generator objective contains real-data terms, two optimizers, separate backward passes.
Source: https://arxiv.org/abs/1807.00734
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
NZ, B = 4, 128


def real_batch(n):
    c = torch.randint(0, 2, (n, 1)).float()
    return c * (2 + 0.3 * torch.randn(n, 1)) + (1 - c) * (-2 + 0.3 * torch.randn(n, 1))


G = nn.Sequential(nn.Linear(NZ, 32), nn.ReLU(), nn.Linear(32, 1))
D = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
ones, zeros = torch.ones(B, 1), torch.zeros(B, 1)

for it in range(40):
    real = real_batch(B)
    fake = G(torch.randn(B, NZ))
    dr, df = D(real), D(fake.detach())
    d_loss = (
        F.binary_cross_entropy_with_logits(dr - df.mean(), ones)
        + F.binary_cross_entropy_with_logits(df - dr.mean(), zeros)
    ) / 2
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()

    dr, df = D(real), D(fake)
    g_loss = (
        F.binary_cross_entropy_with_logits(dr - df.mean(), zeros)
        + F.binary_cross_entropy_with_logits(df - dr.mean(), ones)
    ) / 2
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if it % 5 == 0:
        print(f"it {it} d {d_loss.item():.4f} g {g_loss.item():.4f}")

with torch.no_grad():
    s = G(torch.randn(2000, NZ))
print("generated mean/std", round(s.mean().item(), 4), round(s.std().item(), 4))
