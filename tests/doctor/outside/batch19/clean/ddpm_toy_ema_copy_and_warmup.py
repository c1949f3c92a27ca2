"""DDPM (epsilon prediction) on 2-D toy data with an EMA copy of the denoiser and linear LR
warmup from zero (correct, unusual: a second model updated by in-place .data arithmetic).

After every optimizer step the EMA network's parameters are updated in place under no_grad
(ema = decay * ema + (1 - decay) * online, via lerp_ on .data); the EMA copy never receives
gradients and is never stepped by the optimizer, and it does not feed back into the online
model (it is used only for sampling, as in common diffusion codebases). The learning rate
starts at exactly 0 and warms up linearly via LambdaLR.

Source: https://github.com/real-stanford/diffusion_policy/issues/63
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
ac = torch.cumprod(alphas, 0)


class Denoiser(nn.Module):
    def __init__(self, h=96):
        super().__init__()
        self.t_embed = nn.Embedding(T, h)
        self.inp = nn.Linear(2, h)
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(h, h), nn.SiLU(), nn.Linear(h, 2))

    def forward(self, x, t):
        return self.out(self.inp(x) + self.t_embed(t))


def two_moons(n, g):
    t = torch.rand(n, generator=g) * math.pi
    up = torch.rand(n, generator=g) < 0.5
    x = torch.where(up, t.cos(), 1 - t.cos())
    y = torch.where(up, t.sin(), 0.5 - t.sin())
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2, generator=g)


@torch.no_grad()
def ema_update(ema_model, model, decay):
    for pe, p in zip(ema_model.parameters(), model.parameters()):
        pe.data.lerp_(p.data, 1 - decay)


@torch.no_grad()
def sample(model, n):
    x = torch.randn(n, 2)
    for i in reversed(range(T)):
        t = torch.full((n,), i)
        eps = model(x, t)
        x = (x - betas[i] / (1 - ac[i]).sqrt() * eps) / alphas[i].sqrt()
        if i > 0:
            x = x + betas[i].sqrt() * torch.randn_like(x)
    return x


def main():
    g = torch.Generator().manual_seed(1)
    model = Denoiser()
    ema_model = copy.deepcopy(model).requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    warmup = 50
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / warmup))
    for step in range(200):
        x0 = two_moons(128, g)
        t = torch.randint(0, T, (128,), generator=g)
        noise = torch.randn(x0.shape, generator=g)
        xt = ac[t].sqrt()[:, None] * x0 + (1 - ac[t]).sqrt()[:, None] * noise
        loss = F.mse_loss(model(xt, t), noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        ema_update(ema_model, model, decay=0.98)
        if step % 40 == 0 or step == 199:
            print(f"step {step:3d} lr {sched.get_last_lr()[0]:.5f} loss {loss.item():.4f}")
    xs = sample(ema_model, 500)
    print(f"EMA samples mean {xs.mean(0).tolist()} std {xs.std(0).tolist()}")


if __name__ == "__main__":
    main()
