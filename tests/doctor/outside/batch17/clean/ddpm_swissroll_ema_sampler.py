"""Tiny DDPM (epsilon prediction) on a 2-D Swiss-roll, with an EMA copy used for sampling.

Clean program. Unusual on purpose: every sample in the batch gets its own random
timestep; the network predicts the added noise (target is the noise, not the data); an
exponential-moving-average copy of the denoiser is kept with requires_grad_(False) and
updated in place with lerp_ under no_grad after each optimizer step, and that EMA copy
is used only for ancestral sampling at the end; its weights are never written back into
the trained model. The report asks why EMA weights are not loaded back into the online
model during training; this program keeps them separate, as the reference code does.

Source: https://github.com/lucidrains/denoising-diffusion-pytorch/issues/63
"""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

T = 100
betas = torch.linspace(1e-4, 0.05, T)
alphas = 1 - betas
abar = torch.cumprod(alphas, 0)


def swiss_roll(n):
    t = 1.5 * math.pi * (1 + 2 * torch.rand(n))
    return torch.stack([t * torch.cos(t), t * torch.sin(t)], 1) / 10.0


def t_embed(t, dim=16):
    freqs = torch.exp(-math.log(1000.0) * torch.arange(dim // 2) / (dim // 2))
    ang = t.float()[:, None] * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=-1)


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 + 16, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, t_embed(t)], dim=-1))


model = Denoiser()
ema = copy.deepcopy(model).requires_grad_(False)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
EMA_DECAY = 0.99

for step in range(400):
    x0 = swiss_roll(128)
    t = torch.randint(0, T, (x0.size(0),))
    noise = torch.randn_like(x0)
    a = abar[t].unsqueeze(1)
    xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
    loss = F.mse_loss(model(xt, t), noise)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.lerp_(pm, 1 - EMA_DECAY)
    if step % 80 == 0 or step == 399:
        print(f"step {step:3d}  eps-mse {loss.item():.4f}")

with torch.no_grad():
    x = torch.randn(500, 2)
    for i in reversed(range(T)):
        tt = torch.full((500,), i)
        eps = ema(x, tt)
        x = (x - betas[i] / (1 - abar[i]).sqrt() * eps) / alphas[i].sqrt()
        if i > 0:
            x = x + betas[i].sqrt() * torch.randn_like(x)
    r = x.norm(dim=1)
    print(f"EMA samples: mean radius {r.mean().item():.3f} (data ~{swiss_roll(5000).norm(dim=1).mean().item():.3f})")
