"""WGAN-GP on a 2-D ring of eight Gaussians, five critic updates per generator update.

Bug: the critic optimizer's gradients are cleared once, before the inner critic loop,
instead of before every critic update. Inside the loop each backward() adds to the
gradients left over from the earlier critic steps, so the k-th critic step applies the
sum of k gradients. Nothing errors and the losses keep moving, but every critic update
after the first is wrong (and grows with n_critic). The BigGAN-PyTorch author confirmed the
missing D_optim.zero_grad() between discriminator steps was a typo.

Source: https://github.com/ajbrock/BigGAN-PyTorch/issues/25
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

Z_DIM = 8
N_CRITIC = 5
GP_WEIGHT = 10.0
BATCH = 64


def real_batch(n):
    k = torch.randint(0, 8, (n,))
    ang = k.float() * (2 * math.pi / 8)
    centers = torch.stack([torch.cos(ang), torch.sin(ang)], dim=1) * 2.0
    return centers + 0.05 * torch.randn(n, 2)


G = nn.Sequential(nn.Linear(Z_DIM, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))


def gradient_penalty(real, fake):
    alpha = torch.rand(real.size(0), 1)
    x_hat = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = D(x_hat)
    (grad,) = torch.autograd.grad(out.sum(), x_hat, create_graph=True)
    return ((grad.norm(2, dim=1) - 1.0) ** 2).mean()


for it in range(40):
    opt_d.zero_grad()  # BUG-LINE
    for _ in range(N_CRITIC):
        real = real_batch(BATCH)
        with torch.no_grad():
            fake = G(torch.randn(BATCH, Z_DIM))
        wdist = D(real).mean() - D(fake).mean()
        d_loss = -wdist + GP_WEIGHT * gradient_penalty(real, fake)
        d_loss.backward()
        opt_d.step()

    for p in D.parameters():
        p.requires_grad_(False)
    opt_g.zero_grad()
    g_loss = -D(G(torch.randn(BATCH, Z_DIM))).mean()
    g_loss.backward()
    opt_g.step()
    for p in D.parameters():
        p.requires_grad_(True)

    if it % 10 == 0 or it == 39:
        with torch.no_grad():
            s = G(torch.randn(512, Z_DIM))
            radius = s.norm(dim=1).mean().item()
        print(
            f"iter {it:3d}  d_loss {d_loss.item():8.4f}  w_est {wdist.item():7.4f}  "
            f"g_loss {g_loss.item():8.4f}  mean radius {radius:.3f}"
        )
