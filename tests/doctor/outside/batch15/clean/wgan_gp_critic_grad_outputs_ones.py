"""WGAN-GP on a 2-D ring of 8 Gaussians (MLP generator and critic, two Adam optimizers).

Unusual but correct: the gradient penalty is built with torch.autograd.grad on a critic
output of shape (B, 1), with grad_outputs=torch.ones_like(out) (the per-sample gradients
of sum(out)), create_graph=True so that the penalty itself can be back-propagated into
the critic weights, and inputs that were made to require grad. The critic is updated
several times per generator step, the critic has no BatchNorm, the generator samples are
detached for the critic step, and Adam uses betas=(0, 0.9) as in the paper.

Source: https://github.com/kuc2477/pytorch-wgan-gp/issues/1
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

centers = torch.tensor([[math.cos(2 * math.pi * k / 8), math.sin(2 * math.pi * k / 8)] for k in range(8)]) * 2


def sample_real(n):
    return centers[torch.randint(0, 8, (n,))] + 0.05 * torch.randn(n, 2)


G = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
Dc = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.0, 0.9))
opt_d = torch.optim.Adam(Dc.parameters(), lr=2e-3, betas=(0.0, 0.9))


def penalty(real, fake):
    alpha = torch.rand(real.shape[0], 1)
    inter = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = Dc(inter)
    grad = torch.autograd.grad(
        outputs=out, inputs=inter, grad_outputs=torch.ones_like(out), create_graph=True, retain_graph=True
    )[0]
    return ((grad.norm(2, dim=1) - 1) ** 2).mean()


for it in range(120):
    for _ in range(3):
        real = sample_real(64)
        fake = G(torch.randn(64, 4)).detach()
        gp = penalty(real, fake)
        w_dist = Dc(real).mean() - Dc(fake).mean()
        loss_d = -w_dist + 10.0 * gp
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
    loss_g = -Dc(G(torch.randn(64, 4))).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    if it % 30 == 0:
        print(f"iter {it} W {w_dist.item():.3f} gp {gp.item():.3f} g {loss_g.item():.3f}")
with torch.no_grad():
    s = G(torch.randn(256, 4))
print("mean radius of samples", s.norm(dim=1).mean().item(), "(target 2.0)")
