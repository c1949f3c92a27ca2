"""GAN on a 2-D ring of 8 Gaussians with a spectrally normalised discriminator (torch.nn.utils.parametrizations.
spectral_norm) and the hinge loss, as in SN-GAN. Two optimizers with different learning rates (TTUR-style),
two discriminator updates per generator update, the generator output detached for the discriminator step and
not detached for the generator step, and the discriminator's gradients produced during the generator step are
simply discarded by zero_grad before the next discriminator step. The spectral-norm power iteration only
updates in train mode, which the model stays in throughout.
Source: https://arxiv.org/abs/1802.05957
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm

torch.manual_seed(0)
torch.set_num_threads(2)
centers = torch.tensor([[math.cos(2 * math.pi * k / 8), math.sin(2 * math.pi * k / 8)] for k in range(8)]) * 2


def real(n):
    return centers[torch.randint(0, 8, (n,))] + 0.05 * torch.randn(n, 2)


G = nn.Sequential(nn.Linear(8, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))
D = nn.Sequential(
    spectral_norm(nn.Linear(2, 128)),
    nn.LeakyReLU(0.1),
    spectral_norm(nn.Linear(128, 128)),
    nn.LeakyReLU(0.1),
    spectral_norm(nn.Linear(128, 1)),
)
opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.9))
opt_d = torch.optim.Adam(D.parameters(), lr=4e-4, betas=(0.0, 0.9))
N_CRITIC = 2
for it in range(150):
    for _ in range(N_CRITIC):
        fake = G(torch.randn(128, 8)).detach()
        d_loss = F.relu(1 - D(real(128))).mean() + F.relu(1 + D(fake)).mean()
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
    g_loss = -D(G(torch.randn(128, 8))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if it % 50 == 0:
        print(f"iter {it} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")
with torch.no_grad():
    s = G(torch.randn(2000, 8))
    print("mean distance to nearest mode:", round(torch.cdist(s, centers).min(1).values.mean().item(), 4))
