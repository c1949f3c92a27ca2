"""Density estimation with a small RealNVP-style flow (alternating affine coupling layers) on a 2-D ring-shaped
data set, trained by maximum likelihood. Each coupling maps x -> z with z2 = x2 * exp(s) + t, whose log-Jacobian
determinant is +sum(s). The negative log-likelihood is written as -(log N(z) - log_det) instead of
-(log N(z) + log_det), so the optimiser is rewarded for *contracting* volume: the flow shrinks everything
towards the origin where the base density is high instead of fitting the data. The loss is finite and keeps
decreasing, so nothing looks wrong.
Source: https://github.com/VincentStimper/normalizing-flows/issues/27
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)


def ring(n):
    a = torch.rand(n) * 2 * math.pi
    r = 2.0 + 0.1 * torch.randn(n)
    return torch.stack([r * torch.cos(a), r * torch.sin(a)], 1)


class Coupling(nn.Module):
    def __init__(self, flip):
        super().__init__()
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(1, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x):
        if self.flip:
            x = x.flip(1)
        x1, x2 = x[:, :1], x[:, 1:]
        s, t = self.net(x1).chunk(2, 1)
        s = torch.tanh(s)
        z = torch.cat([x1, x2 * torch.exp(s) + t], 1)
        if self.flip:
            z = z.flip(1)
        return z, s.sum(1)


layers = nn.ModuleList([Coupling(i % 2 == 1) for i in range(6)])
base = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
opt = torch.optim.Adam(layers.parameters(), lr=3e-3)
data = ring(4000)
for step in range(300):
    z = data[torch.randint(0, len(data), (256,))]
    log_det = torch.zeros(256)
    for layer in layers:
        z, ld = layer(z)
        log_det = log_det + ld
    loss = -(base.log_prob(z) - log_det).mean()  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.4f}")
with torch.no_grad():
    z = data[:1000]
    for layer in layers:
        z, _ = layer(z)
print("std of latent codes (should be ~1):", z.std(0).tolist())
