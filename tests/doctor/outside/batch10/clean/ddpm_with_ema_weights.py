"""DDPM epsilon-prediction training on a 2-D point cloud with an exponential moving average copy of the
denoiser, as used for sampling in DDPM. The EMA model is a deepcopy with requires_grad disabled, is never
given to the optimizer, and is updated in place under no_grad after every optimizer step with a warmup-style
decay min(0.999, (1 + step) / (10 + step)). Fresh timesteps and noise are drawn at every step. At the end a
short ancestral sampling loop is run with the EMA model in eval mode.
Source: https://arxiv.org/abs/2006.11239
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


def moons(n):
    a = torch.rand(n) * math.pi
    up = torch.rand(n) < 0.5
    x = torch.where(up, torch.cos(a), 1 - torch.cos(a))
    y = torch.where(up, torch.sin(a), 0.5 - torch.sin(a))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2)


class Eps(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, (t.float() / T).unsqueeze(1)], 1))


model = Eps()
ema = copy.deepcopy(model).requires_grad_(False)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
data = moons(4000)
for step in range(400):
    x0 = data[torch.randint(0, 4000, (128,))]
    t = torch.randint(0, T, (128,))
    eps = torch.randn_like(x0)
    xt = abar[t].sqrt()[:, None] * x0 + (1 - abar[t]).sqrt()[:, None] * eps
    loss = F.mse_loss(model(xt, t), eps)
    opt.zero_grad()
    loss.backward()
    opt.step()
    decay = min(0.999, (1 + step) / (10 + step))
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.lerp_(pm, 1 - decay)
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.4f} ema decay {decay:.3f}")
ema.eval()
with torch.no_grad():
    x = torch.randn(500, 2)
    for i in reversed(range(T)):
        t = torch.full((500,), i)
        mean = (x - betas[i] / (1 - abar[i]).sqrt() * ema(x, t)) / alphas[i].sqrt()
        x = mean + (betas[i].sqrt() * torch.randn_like(x) if i > 0 else 0)
print("sample mean/std:", x.mean(0).tolist(), x.std(0).tolist())
