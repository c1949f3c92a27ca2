"""Train a DDPM-style denoiser (an MLP conditioned on the timestep) on a 2-D two-moons-like point
cloud with the epsilon-prediction objective. The cumulative signal level alpha_bar_t should be
cumprod(1 - beta_t), but it is computed as cumprod(beta_t). With betas around 1e-4..2e-2 this makes
alpha_bar essentially 0 for every t >= 1, so the "noised" sample x_t is pure noise at every
timestep and predicting epsilon is trivial (x_t == eps). The loss collapses quickly, which looks like
great training; nothing errors.

Source: https://github.com/LuChengTHU/dpm-solver/issues/13
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
T = 100
betas = torch.linspace(1e-4, 0.02, T)
alphas_cumprod = torch.cumprod(betas, dim=0)  # BUG-LINE
sqrt_ab = alphas_cumprod.sqrt()
sqrt_1mab = (1 - alphas_cumprod).sqrt()


def sample_data(n):
    t = torch.rand(n) * math.pi
    flip = torch.rand(n) < 0.5
    x = torch.where(flip, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(flip, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2)


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 + 16, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))

    def forward(self, x, t):
        freqs = torch.exp(torch.arange(8) * -0.8)
        ang = t.float()[:, None] * freqs[None]
        return self.net(torch.cat([x, ang.sin(), ang.cos()], 1))


model = Denoiser()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(200):
    x0 = sample_data(256)
    t = torch.randint(0, T, (256,))
    eps = torch.randn_like(x0)
    xt = sqrt_ab[t, None] * x0 + sqrt_1mab[t, None] * eps
    loss = F.mse_loss(model(xt, t), eps)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("final eps-mse", round(loss.item(), 5))
print("alpha_bar at t=0,10,50,99:", [f"{alphas_cumprod[i].item():.3g}" for i in (0, 10, 50, 99)])
