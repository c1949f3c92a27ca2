"""Minimal DDPM on a 2-D toy distribution (noisy ring), epsilon-prediction objective.

The forward process q(x_t | x_0) is supposed to add Gaussian noise, eps ~ N(0, I). The training
step draws the noise with torch.rand_like (uniform on [0, 1)) instead of torch.randn_like. The
network still learns to predict *that* noise, so the loss decreases nicely, but the model is
trained on a corrupted forward process (biased, non-Gaussian) that does not match the Gaussian
reverse sampler, so samples are wrong.

Source: https://github.com/acids-ircam/diffusion_models/issues/8
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

T = 100


def make_schedule(T):
    betas = torch.linspace(1e-4, 0.05, T)
    alphas = 1.0 - betas
    alphas_cumprod = torch.cumprod(alphas, dim=0)
    return {
        "betas": betas,
        "alphas": alphas,
        "alphas_cumprod": alphas_cumprod,
        "sqrt_ac": alphas_cumprod.sqrt(),
        "sqrt_1m_ac": (1 - alphas_cumprod).sqrt(),
    }


def extract(a, t, x_shape):
    return a.gather(0, t).reshape(-1, *([1] * (len(x_shape) - 1)))


def sample_ring(n, g=None):
    theta = torch.rand(n, generator=g) * 2 * math.pi
    r = 1.0 + 0.05 * torch.randn(n, generator=g)
    return torch.stack([r * theta.cos(), r * theta.sin()], dim=1)


class TimeEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(1000.0) * torch.arange(half) / half)
        args = t.float()[:, None] * freqs[None]
        return torch.cat([args.sin(), args.cos()], dim=-1)


class EpsModel(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.temb = nn.Sequential(TimeEmbedding(32), nn.Linear(32, hidden), nn.SiLU())
        self.inp = nn.Linear(2, hidden)
        self.net = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 2))

    def forward(self, x, t):
        return self.net(self.inp(x) + self.temb(t))


def q_sample(sched, x0, t, noise):
    return extract(sched["sqrt_ac"], t, x0.shape) * x0 + extract(sched["sqrt_1m_ac"], t, x0.shape) * noise


def p_losses(model, sched, x0):
    t = torch.randint(0, T, (x0.shape[0],))
    noise = torch.rand_like(x0)  # BUG-LINE
    x_t = q_sample(sched, x0, t, noise)
    return F.mse_loss(model(x_t, t), noise)


@torch.no_grad()
def sample(model, sched, n):
    x = torch.randn(n, 2)
    for i in reversed(range(T)):
        t = torch.full((n,), i, dtype=torch.long)
        eps = model(x, t)
        beta, alpha, ac = sched["betas"][i], sched["alphas"][i], sched["alphas_cumprod"][i]
        mean = (x - beta / (1 - ac).sqrt() * eps) / alpha.sqrt()
        x = mean + (beta.sqrt() * torch.randn_like(x) if i > 0 else 0)
    return x


def main():
    sched = make_schedule(T)
    model = EpsModel()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(3)
    for step in range(250):
        x0 = sample_ring(256, g)
        loss = p_losses(model, sched, x0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == 249:
            print(f"step {step:3d} loss {loss.item():.4f}")
    xs = sample(model, sched, 512)
    radius = xs.norm(dim=1)
    print(f"sample radius mean {radius.mean():.3f} std {radius.std():.3f} (data: 1.0 / 0.05)")


if __name__ == "__main__":
    main()
