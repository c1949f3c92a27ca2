"""Fit a small masked-autoregressive-style affine flow (two affine coupling blocks with a
permutation) to a 2-D correlated Gaussian mixture by maximum likelihood. The density direction maps
data x to base noise u = (x - m) * exp(-a), whose log|det du/dx| is -sum(a); the code adds +sum(a)
instead. The objective is therefore not the data log-likelihood: the flow is rewarded for expanding
where it should contract. The loss still goes down (it can go very negative), with no error.

Source: https://github.com/ikostrikov/pytorch-flows/issues/16
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)


def sample_data(n):
    c = torch.randint(0, 2, (n, 1)).float()
    z = torch.randn(n, 2) * torch.tensor([0.3, 0.8])
    return z + c * torch.tensor([2.0, -1.0]) - (1 - c) * torch.tensor([1.0, -1.0])


class Coupling(nn.Module):
    def __init__(self, flip):
        super().__init__()
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Linear(64, 2))

    def forward(self, x):
        if self.flip:
            x = x.flip(1)
        x1, x2 = x[:, :1], x[:, 1:]
        m, a = self.net(x1).chunk(2, dim=1)
        a = torch.tanh(a)
        u2 = (x2 - m) * torch.exp(-a)
        logdet = a.sum(1)  # BUG-LINE
        out = torch.cat([x1, u2], 1)
        return (out.flip(1) if self.flip else out), logdet


flows = nn.ModuleList([Coupling(False), Coupling(True), Coupling(False), Coupling(True)])
opt = torch.optim.Adam(flows.parameters(), lr=3e-3)
base_logp = lambda u: (-0.5 * u.pow(2) - 0.5 * math.log(2 * math.pi)).sum(1)


def log_prob(x):
    total = torch.zeros(x.size(0))
    for f in flows:
        x, ld = f(x)
        total = total + ld
    return base_logp(x) + total


for step in range(200):
    x = sample_data(256)
    loss = -log_prob(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    g = torch.linspace(-6, 6, 241)
    grid = torch.stack(torch.meshgrid(g, g, indexing="ij"), -1).view(-1, 2)
    mass = log_prob(grid).exp().sum().item() * (g[1] - g[0]).item() ** 2
print("final nll", round(loss.item(), 4), "total density mass on grid (should be ~1)", round(mass, 3))
