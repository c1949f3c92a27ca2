"""WGAN-GP on random-phase sine waves with a Conv1d critic.

Clean program. Unusual on purpose: the gradient penalty differentiates the critic output
with respect to interpolated inputs with create_graph=True, so the critic loss needs a
second-order backward; the critic runs five updates (each with its own zero_grad) per
generator update; and during the generator update the critic's parameters are switched
to requires_grad_(False) so that the generator loss flows through the frozen critic into
the generator only. The critic uses LayerNorm instead of BatchNorm (as the WGAN-GP paper
recommends). The report asks why the critic's requires_grad is set to False during the
generator step; that is the intended behaviour shown here.

Source: https://github.com/caogang/wgan-gp/issues/46
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

L, Z = 32, 8
t = torch.linspace(0, 2 * math.pi, L)


def real_batch(n):
    phase = torch.rand(n, 1) * 2 * math.pi
    freq = torch.randint(1, 3, (n, 1)).float()
    return torch.sin(freq * t + phase).unsqueeze(1)  # (n, 1, L)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(1, 16, 5, stride=2, padding=2), nn.LeakyReLU(0.2), nn.Conv1d(16, 32, 5, stride=2, padding=2)
        )
        self.norm = nn.LayerNorm([32, L // 4])
        self.head = nn.Linear(32 * (L // 4), 1)

    def forward(self, x):
        h = nn.functional.leaky_relu(self.norm(self.conv(x)), 0.2)
        return self.head(h.flatten(1))


G = nn.Sequential(nn.Linear(Z, 64), nn.ReLU(), nn.Linear(64, L), nn.Tanh(), nn.Unflatten(1, (1, L)))
D = Critic()
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.9))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))


def gradient_penalty(real, fake):
    eps = torch.rand(real.size(0), 1, 1)
    mix = (eps * real + (1 - eps) * fake).requires_grad_(True)
    (g,) = torch.autograd.grad(D(mix).sum(), mix, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()


for it in range(30):
    for _ in range(4):
        real = real_batch(48)
        fake = G(torch.randn(48, Z)).detach()
        w = D(real).mean() - D(fake).mean()
        d_loss = -w + 10.0 * gradient_penalty(real, fake)
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()

    D.requires_grad_(False)
    g_loss = -D(G(torch.randn(48, Z))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    D.requires_grad_(True)

    if it % 10 == 0 or it == 29:
        with torch.no_grad():
            amp = G(torch.randn(256, Z)).abs().amax(dim=-1).mean().item()
        print(
            f"iter {it:3d}  d_loss {d_loss.item():8.4f}  W {w.item():.4f}  g_loss {g_loss.item():8.4f}  "
            f"mean peak amplitude {amp:.3f}"
        )
