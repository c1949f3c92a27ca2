"""Denoising-diffusion (epsilon-prediction) training of a small MLP on a 2-D two-moons-like point cloud. To make
"sampling reproducible" the loop calls torch.manual_seed(...) at the top of every iteration, before the batch
indices, timesteps and Gaussian noise are drawn. Every step therefore sees the same minibatch, the same
timesteps and the same noise, so the model fits one fixed (x0, t, eps) triple set instead of the diffusion
objective; the training loss falls quickly and looks healthy. Re-seeding the global generator is perfectly
legal, so nothing complains.
Source: https://github.com/huggingface/diffusers/issues/175
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
T = 100
betas = torch.linspace(1e-4, 0.05, T)
abar = torch.cumprod(1 - betas, 0)


def moons(n):
    a = torch.rand(n) * math.pi
    up = torch.rand(n) < 0.5
    x = torch.where(up, torch.cos(a), 1 - torch.cos(a))
    y = torch.where(up, torch.sin(a), 0.5 - torch.sin(a))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2)


data = moons(4000)


class Eps(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, (t.float() / T).unsqueeze(1)], 1))


model = Eps()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(400):
    torch.manual_seed(1234)  # BUG-LINE
    idx = torch.randint(0, len(data), (128,))
    x0 = data[idx]
    t = torch.randint(0, T, (128,))
    eps = torch.randn_like(x0)
    xt = abar[t].sqrt().unsqueeze(1) * x0 + (1 - abar[t]).sqrt().unsqueeze(1) * eps
    loss = F.mse_loss(model(xt, t), eps)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.4f}")
g = torch.Generator().manual_seed(99)
x0 = data[torch.randint(0, len(data), (2000,), generator=g)]
t = torch.randint(0, T, (2000,), generator=g)
eps = torch.randn(x0.shape, generator=g)
xt = abar[t].sqrt().unsqueeze(1) * x0 + (1 - abar[t]).sqrt().unsqueeze(1) * eps
with torch.no_grad():
    print("held-out denoising loss:", round(F.mse_loss(model(xt, t), eps).item(), 4))
