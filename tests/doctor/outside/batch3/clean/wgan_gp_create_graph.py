"""WGAN-GP: the critic's gradient penalty takes ``torch.autograd.grad(..., create_graph=True)`` on interpolated
samples, so the penalty is differentiated a second time in the critic's backward; five critic steps per
generator step, two optimizers, each zeroed. Correct and unusual (double backward, unbalanced step counts).

Source: https://nn.labml.ai/gan/wasserstein/gradient_penalty/index.html
"""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
C = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.9))
opt_c = torch.optim.Adam(C.parameters(), lr=1e-4, betas=(0.0, 0.9))
real_data = torch.randn(1024, 2) * 0.3 + 1.0
for _it in range(4):
    for _k in range(5):
        real = real_data[torch.randint(0, 1024, (32,))]
        fake = G(torch.randn(32, 4)).detach()
        eps = torch.rand(32, 1)
        mix = (eps * real + (1 - eps) * fake).requires_grad_(True)
        (grad,) = torch.autograd.grad(C(mix).sum(), mix, create_graph=True)
        penalty = ((grad.norm(2, dim=1) - 1) ** 2).mean()
        c_loss = C(fake).mean() - C(real).mean() + 10 * penalty
        opt_c.zero_grad()
        c_loss.backward()
        opt_c.step()
    g_loss = -C(G(torch.randn(32, 4))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
