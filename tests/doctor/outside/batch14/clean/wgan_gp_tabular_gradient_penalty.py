"""WGAN-GP on a 2-D toy distribution (mixture of Gaussians) with a gradient penalty.

Unusual but correct: the critic's gradient penalty is computed with
torch.autograd.grad(..., create_graph=True) on random interpolates between
real and fake samples, so the penalty term is itself differentiable with
respect to the critic weights and the second-order backward reaches them.
Fake samples are detached for the critic update; the critic is updated 5
times per generator step with its own Adam optimizer (betas 0.5, 0.9 as in
the paper); the generator step only steps the generator's optimizer, and the
critic has no BatchNorm (which would break the per-sample penalty).

Source: https://github.com/caogang/wgan-gp/issues/4
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

centers = torch.tensor([[math.cos(a), math.sin(a)] for a in torch.arange(8) * (2 * math.pi / 8)]) * 2.0


def real_batch(n):
    return centers[torch.randint(0, 8, (n,))] + 0.05 * torch.randn(n, 2)


G = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
D = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))
LAMBDA, N_CRITIC, BS = 0.1, 5, 128


def gradient_penalty(real, fake):
    alpha = torch.rand(real.shape[0], 1)
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = D(interp)
    grads = torch.autograd.grad(
        outputs=out, inputs=interp, grad_outputs=torch.ones_like(out), create_graph=True, retain_graph=True
    )[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


for it in range(100):
    for _ in range(N_CRITIC):
        real = real_batch(BS)
        fake = G(torch.randn(BS, 8)).detach()
        gp = gradient_penalty(real, fake)
        d_loss = D(fake).mean() - D(real).mean() + LAMBDA * gp
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
    fake = G(torch.randn(BS, 8))
    g_loss = -D(fake).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if it % 20 == 0 or it == 99:
        with torch.no_grad():
            samples = G(torch.randn(1000, 8))
            dist = torch.cdist(samples, centers).min(1).values.mean().item()
        print(
            f"iter {it:3d} d_loss {d_loss.item():.4f} gp {gp.item():.4f} g_loss {g_loss.item():.4f} "
            f"mean_dist_to_mode {dist:.3f}"
        )
