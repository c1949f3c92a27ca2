"""RealNVP-style normalizing flow (affine coupling layers) fitted to a 2-D two-moons set.

Clean program. Unusual on purpose: the model is trained by exact maximum likelihood,
loss = -(log N(f(x); 0, I) + log|det df/dx|), where each coupling layer contributes
sum(s * (1 - mask)) to the log-determinant (s is tanh-bounded); half of each layer's
input is passed through unchanged by a fixed binary mask (a buffer, not a parameter);
the loss can legitimately become negative because it is a continuous density. The
inverse pass is checked against the forward pass at the end. The report explains that
the loss is the prior NLL plus the summed log-determinants, as implemented here.

Source: https://github.com/chrischute/real-nvp/issues/6
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)


def two_moons(n):
    t = torch.rand(n) * math.pi
    upper = torch.rand(n) < 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2)


class Coupling(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

    def _st(self, xm):
        s, t = self.net(xm).chunk(2, dim=-1)
        return torch.tanh(s) * (1 - self.mask), t * (1 - self.mask)

    def forward(self, x):
        s, t = self._st(x * self.mask)
        y = x * self.mask + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(dim=-1)

    def inverse(self, y):
        s, t = self._st(y * self.mask)
        return y * self.mask + (1 - self.mask) * ((y - t) * torch.exp(-s))


masks = [torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])] * 3
flow = nn.ModuleList([Coupling(m) for m in masks])
base = torch.distributions.Normal(0.0, 1.0)
opt = torch.optim.Adam(flow.parameters(), lr=2e-3)
mean, scale = torch.tensor([0.5, 0.25]), torch.tensor([0.9, 0.5])

for step in range(150):
    x = (two_moons(128) - mean) / scale
    z, logdet = x, torch.zeros(x.size(0))
    for layer in flow:
        z, ld = layer(z)
        logdet = logdet + ld
    nll = -(base.log_prob(z).sum(dim=-1) + logdet).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if step % 30 == 0 or step == 149:
        print(f"step {step:3d}  nll {nll.item():.4f}")

with torch.no_grad():
    x = (two_moons(8) - mean) / scale
    z = x
    for layer in flow:
        z, _ = layer(z)
    for layer in reversed(flow):
        z = layer.inverse(z)
    print("max inverse reconstruction error", (z - x).abs().max().item())
