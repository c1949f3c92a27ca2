"""RealNVP-style affine coupling flow trained by maximum likelihood on 2-D data.

Source: https://github.com/VincentStimper/normalizing-flows/pull/28

The pull request fixes the sign of the log-determinant returned when a flow is run in
one direction versus the other. This program implements the data->latent direction
correctly: each affine coupling layer returns z = x*exp(s) + t together with a
per-sample log|det J| = sum(s) over feature dimensions (shape [batch]), the layer
log-dets are added up across layers, and the negative log-likelihood is
-(log N(z; 0, I) + sum_logdet).mean(). Unusual on purpose: binary masks are
registered buffers (not parameters), s is bounded with tanh, and the loss contains an
explicit Jacobian term that is not a function of any target.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)


def sample_data(n):
    theta = torch.rand(n) * math.pi
    r = 1.0 + 0.1 * torch.randn(n)
    x = torch.stack([r * torch.cos(theta), r * torch.sin(theta) - 0.3], 1)
    return x * 2


class Coupling(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        xm = x * self.mask
        s, t = self.net(xm).chunk(2, dim=1)
        s = torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        z = xm + (1 - self.mask) * (x * torch.exp(s) + t)
        return z, s.sum(dim=1)


masks = [torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])] * 2
flow = nn.ModuleList([Coupling(m) for m in masks])
opt = torch.optim.Adam(flow.parameters(), lr=2e-3)
LOG_2PI = math.log(2 * math.pi)


def base_log_prob(z):
    return -0.5 * (z.pow(2).sum(dim=1) + 2 * LOG_2PI)


for step in range(1, 201):
    x = sample_data(256)
    z, total_logdet = x, torch.zeros(x.shape[0])
    for layer in flow:
        z, ld = layer(z)
        total_logdet = total_logdet + ld
    nll = -(base_log_prob(z) + total_logdet).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step} nll {nll.item():.4f} mean logdet {total_logdet.mean().item():.4f}")
