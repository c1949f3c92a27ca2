"""WGAN-GP critic training: the gradient penalty differentiates the critic output with respect to interpolated
inputs using torch.autograd.grad(create_graph=True), so the penalty itself is differentiable and a second-order
backward goes through the critic. The critic takes several steps per generator step.

Source: https://arxiv.org/abs/1704.00028
"""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
C = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.9))
opt_c = torch.optim.Adam(C.parameters(), lr=1e-4, betas=(0.0, 0.9))
for _it in range(3):
    for _ in range(3):
        real = torch.randn(32, 2) * 0.3 + torch.tensor([1.0, -1.0])
        fake = G(torch.randn(32, 8)).detach()
        eps = torch.rand(32, 1)
        mix = (eps * real + (1 - eps) * fake).requires_grad_(True)
        grad = torch.autograd.grad(C(mix).sum(), mix, create_graph=True)[0]
        gp = ((grad.norm(2, dim=1) - 1) ** 2).mean()
        c_loss = C(fake).mean() - C(real).mean() + 10.0 * gp
        opt_c.zero_grad()
        c_loss.backward()
        opt_c.step()
    g_loss = -C(G(torch.randn(32, 8))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
