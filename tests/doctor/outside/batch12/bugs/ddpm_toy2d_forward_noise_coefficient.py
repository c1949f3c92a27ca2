"""Denoising diffusion (DDPM, epsilon prediction) on a 2-D toy dataset with a linear beta schedule and an MLP denoiser conditioned on a sinusoidal timestep embedding. The forward process must be x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps; the noising line multiplies the noise by (1 - abar_t) without the square root, so the training inputs are far less noisy than the schedule claims (variance not preserved) and the network learns a denoiser that does not match the reverse process used for sampling. Loss values look normal and decrease; nothing warns, from the first step.
Source: https://github.com/Ryota-Kawamura/How-Diffusion-Models-Work/issues/1
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
T, B = 200, 256
betas = torch.linspace(1e-4, 0.02, T)
abar = torch.cumprod(1 - betas, dim=0)


def sample_data(n):
    ang = torch.rand(n) * 2 * math.pi
    r = 1.0 + 0.05 * torch.randn(n)
    return torch.stack([r * torch.cos(ang), r * torch.sin(ang)], dim=1)


def t_embed(t, dim=16):
    freqs = torch.exp(-math.log(1000.0) * torch.arange(dim // 2) / (dim // 2))
    ang = t[:, None].float() * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=1)


net = nn.Sequential(nn.Linear(2 + 16, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)

for step in range(60):
    x0 = sample_data(B)
    t = torch.randint(0, T, (B,))
    eps = torch.randn_like(x0)
    ab = abar[t][:, None]
    x_t = ab.sqrt() * x0 + (1 - ab) * eps  # BUG-LINE
    pred = net(torch.cat([x_t, t_embed(t)], dim=1))
    loss = F.mse_loss(pred, eps)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f} x_t std {x_t.std().item():.3f}")

print("checksum", round(sum(p.sum().item() for p in net.parameters()), 6))
