"""A GAN discriminator with the R1 penalty: the gradient of D's output with respect to the real inputs is taken
with ``autograd.grad(create_graph=True)`` and its squared norm is added to the loss, so the discriminator's
parameters receive second-order gradient through that term. Double backward is intended.

Source: https://arxiv.org/abs/1801.04406
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.Softplus(), nn.Linear(32, 1))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.0, 0.99))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.0, 0.99))
for _step in range(5):
    real = (torch.randn(32, 2) + 1).requires_grad_(True)
    fake = G(torch.randn(32, 4))
    d_real = D(real)
    (grad,) = torch.autograd.grad(d_real.sum(), real, create_graph=True)
    r1 = grad.pow(2).sum(1).mean()
    d_loss = F.softplus(-d_real).mean() + F.softplus(D(fake.detach())).mean() + 5.0 * r1
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = F.softplus(-D(fake)).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
