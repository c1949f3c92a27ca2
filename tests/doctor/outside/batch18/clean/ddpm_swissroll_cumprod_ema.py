"""DDPM (epsilon-prediction) on a 2-D swiss-roll distribution with an EMA copy of the
denoiser.

Unusual but correct: the forward process samples x_t in closed form with the
CUMULATIVE product alpha_bar_t = prod_{s<=t} (1 - beta_s),
x_t = sqrt(alpha_bar_t) x_0 + sqrt(1 - alpha_bar_t) eps (the point clarified in the
report: the paper's alpha_t is DDPM's cumulative alpha_bar_t), with t sampled
uniformly per example and a sinusoidal timestep embedding. An exponential moving
average of the weights is kept with torch.optim.swa_utils.AveragedModel and a custom
EMA avg_fn; it is updated after each optimizer step and is never trained directly.
A short ancestral sampling run with the EMA model checks the sample statistics.

Source: https://github.com/ermongroup/ddim/issues/44
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel

torch.manual_seed(0)
torch.set_num_threads(2)

T = 100
betas = torch.linspace(1e-4, 0.05, T)
alphas = 1.0 - betas
alpha_bar = torch.cumprod(alphas, dim=0)


def swiss_roll(n):
    t = 1.5 * math.pi * (1 + 2 * torch.rand(n))
    x = torch.stack([t * torch.cos(t), t * torch.sin(t)], 1) / 7.0
    return x + 0.05 * torch.randn(n, 2)


def timestep_embedding(t, dim=32):
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.sin(args), torch.cos(args)], 1)


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_mlp = nn.Sequential(nn.Linear(32, 64), nn.SiLU())
        self.net = nn.Sequential(nn.Linear(2 + 64, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, self.t_mlp(timestep_embedding(t))], 1))


def q_sample(x0, t, noise):
    ab = alpha_bar[t][:, None]
    return ab.sqrt() * x0 + (1 - ab).sqrt() * noise


@torch.no_grad()
def sample(model, n):
    x = torch.randn(n, 2)
    for t in reversed(range(T)):
        tt = torch.full((n,), t, dtype=torch.long)
        eps = model(x, tt)
        mean = (x - betas[t] / (1 - alpha_bar[t]).sqrt() * eps) / alphas[t].sqrt()
        x = mean + (betas[t].sqrt() * torch.randn_like(x) if t > 0 else 0)
    return x


def main():
    data = swiss_roll(8192)
    model = Denoiser()
    ema = AveragedModel(model, avg_fn=lambda avg, cur, n: 0.99 * avg + 0.01 * cur)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(500):
        x0 = data[torch.randint(0, len(data), (256,))]
        t = torch.randint(0, T, (256,))
        noise = torch.randn_like(x0)
        loss = F.mse_loss(model(q_sample(x0, t, noise), t), noise)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ema.update_parameters(model)
        if step % 100 == 0 or step == 499:
            print(f"step {step:3d} loss {loss.item():.4f}")
    samples = sample(ema.module, 1024)
    radius = samples.norm(dim=1)
    ref = data[:1024].norm(dim=1)
    print(
        f"EMA samples radius mean {radius.mean():.3f} (data {ref.mean():.3f}), std {radius.std():.3f} (data {ref.std():.3f})"
    )


if __name__ == "__main__":
    main()
