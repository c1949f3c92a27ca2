"""A RealNVP-style normalizing flow (affine coupling layers with alternating masks) trained by maximum likelihood on a 2-D two-moons-like dataset. The data-to-latent pass of a coupling layer computes z = (x - t) * exp(-s), whose log|det J| is -sum(s); the layer returns +sum(s) instead. The negative log-likelihood therefore rewards expanding instead of contracting volume; the loss is a finite number that decreases, no error or warning appears, and the density is wrong from the first step.
Source: https://github.com/danielward27/flowjax/issues/208
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)


def sample_data(n):
    a = torch.rand(n) * math.pi
    up = torch.randint(0, 2, (n,)).bool()
    x = torch.where(up, torch.cos(a), 1 - torch.cos(a))
    y = torch.where(up, torch.sin(a), 0.5 - torch.sin(a))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2)


class Coupling(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 4))

    def to_latent(self, x):
        s, t = self.net(x * self.mask).chunk(2, dim=1)
        s = torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        z = x * self.mask + (1 - self.mask) * (x - t) * torch.exp(-s)
        logdet = s.sum(dim=1)  # BUG-LINE
        return z, logdet


layers = nn.ModuleList(
    [Coupling(torch.tensor([1.0, 0.0]) if i % 2 == 0 else torch.tensor([0.0, 1.0])) for i in range(4)]
)
base = torch.distributions.Normal(0.0, 1.0)
optimizer = torch.optim.Adam(layers.parameters(), lr=3e-3)

for step in range(50):
    x = sample_data(256)
    z, total = x, torch.zeros(x.size(0))
    for layer in layers:
        z, ld = layer.to_latent(z)
        total = total + ld
    nll = -(base.log_prob(z).sum(1) + total).mean()
    optimizer.zero_grad()
    nll.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} nll {nll.item():.4f} z_std {z.std().item():.3f}")

print("checksum", round(sum(p.sum().item() for p in layers.parameters()), 6))
