"""A Glow-style normalizing flow for 4-D data (a correlated Gaussian-mixture), trained by maximum
likelihood. Each step is ActNorm with data-dependent initialisation (scale and bias set from the
first batch, done once under no_grad and then trained as ordinary parameters), an invertible 1x1
"convolution" (a full 4x4 mixing matrix whose log|det| is computed with torch.linalg.slogdet), and an
affine coupling layer with a tanh-bounded log-scale. The log-determinants of all three maps are
added in the data-to-noise direction, which is the correct change-of-variables sign.

Source: https://arxiv.org/abs/1807.03039
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
D = 4
A = torch.randn(D, D) * 0.5


def sample_data(n):
    c = (torch.rand(n, 1) < 0.5).float()
    return torch.randn(n, D) @ A + 2 * c - 1


class ActNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(D))
        self.log_scale = nn.Parameter(torch.zeros(D))
        self.initialized = False

    def forward(self, x):
        if not self.initialized:
            with torch.no_grad():
                self.loc.copy_(-x.mean(0))
                self.log_scale.copy_(-torch.log(x.std(0) + 1e-6))
            self.initialized = True
        return (x + self.loc) * self.log_scale.exp(), self.log_scale.sum().expand(x.size(0))


class InvLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.linalg.qr(torch.randn(D, D))[0])

    def forward(self, x):
        return x @ self.W.T, torch.linalg.slogdet(self.W)[1].expand(x.size(0))


class Coupling(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(D // 2, 64), nn.ReLU(), nn.Linear(64, D))
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, x):
        xa, xb = x.chunk(2, 1)
        log_s, t = self.net(xa).chunk(2, 1)
        log_s = torch.tanh(log_s)
        return torch.cat([xa, xb * log_s.exp() + t], 1), log_s.sum(1)


flow = nn.ModuleList([m for _ in range(3) for m in (ActNorm(), InvLinear(), Coupling())])


def log_prob(x):
    ld = torch.zeros(x.size(0))
    for m in flow:
        x, l = m(x)
        ld = ld + l
    return (-0.5 * x.pow(2) - 0.5 * math.log(2 * math.pi)).sum(1) + ld


with torch.no_grad():
    log_prob(sample_data(512))
opt = torch.optim.Adam(flow.parameters(), lr=2e-3)
for step in range(150):
    loss = -log_prob(sample_data(256)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("final nll", round(loss.item(), 4), "test nll", round(-log_prob(sample_data(2000)).mean().item(), 4))
