"""Tiny DDPM on a 2-D two-moons-like distribution with an MLP noise predictor.

Unusual but correct: the network is trained to predict the *noise* that was added, so
the regression target is the random tensor `noise` rather than the clean data (the
lucidrains thread explains why the loss compares against random noise). The per-sample
MSE is computed with reduction='none', averaged over the data dimension and then
weighted per timestep with clamped min-SNR weights that are plain constants (no grad).
Timesteps are sampled per example and coefficients are gathered by index. Sampling at
the end runs the reverse chain under no_grad.

Source: https://github.com/lucidrains/denoising-diffusion-pytorch/issues/10
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

n = 2048
a = torch.rand(n) * math.pi
upper = torch.rand(n) < 0.5
data = torch.stack(
    [torch.where(upper, torch.cos(a), 1 - torch.cos(a)), torch.where(upper, torch.sin(a), 0.5 - torch.sin(a))], 1
)
data = (data - data.mean(0)) / data.std(0) + 0.05 * torch.randn(n, 2)

Tsteps = 50
betas = torch.linspace(1e-4, 0.2, Tsteps)
alphas = 1 - betas
abar = torch.cumprod(alphas, 0)
snr = abar / (1 - abar)
weights = torch.clamp(snr, max=5.0) / snr


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_emb = nn.Embedding(Tsteps, 32)
        self.net = nn.Sequential(nn.Linear(2 + 32, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, self.t_emb(t)], 1))


model = Denoiser()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(250):
    x0 = data[torch.randint(0, n, (128,))]
    t = torch.randint(0, Tsteps, (128,))
    noise = torch.randn_like(x0)
    xt = abar[t].sqrt().unsqueeze(1) * x0 + (1 - abar[t]).sqrt().unsqueeze(1) * noise
    per_sample = F.mse_loss(model(xt, t), noise, reduction="none").mean(dim=1)
    loss = (weights[t] * per_sample).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} weighted loss {loss.item():.4f}")

with torch.no_grad():
    x = torch.randn(512, 2)
    for t in reversed(range(Tsteps)):
        tt = torch.full((512,), t, dtype=torch.long)
        eps = model(x, tt)
        x = (x - betas[t] / (1 - abar[t]).sqrt() * eps) / alphas[t].sqrt()
        if t > 0:
            x = x + betas[t].sqrt() * torch.randn_like(x)
print("sample mean", x.mean(0).tolist(), "sample std", x.std(0).tolist())
