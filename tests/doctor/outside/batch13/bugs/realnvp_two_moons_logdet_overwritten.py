"""RealNVP (affine coupling layers with alternating masks) fitted by maximum
likelihood to 2-D two-moons data.

When mapping data to the base distribution, the per-layer log|det J| must be
accumulated over all coupling layers. Inside the loop the running total is
overwritten with the current layer's term (log_det = ld) instead of being added
(log_det = log_det + ld), so the training objective only contains the Jacobian
of the last coupling layer. Earlier layers are free to shrink volume without
penalty; the reported "NLL" decreases nicely but the model is not a correct
density and samples look wrong.

Source: https://github.com/tensorflow/models/issues/7465
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

    def inverse(self, y):
        s, t = self.net(y * self.mask).chunk(2, dim=1)
        s = torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        x = y * self.mask + (1 - self.mask) * (y - t) * torch.exp(-s)
        return x, -s.sum(1)


class RealNVP(nn.Module):
    def __init__(self, n_layers=6):
        super().__init__()
        masks = [torch.tensor([1.0, 0.0]) if i % 2 == 0 else torch.tensor([0.0, 1.0]) for i in range(n_layers)]
        self.layers = nn.ModuleList(Coupling(m) for m in masks)

    def log_prob(self, x):
        log_det = torch.zeros(x.shape[0])
        z = x
        for layer in reversed(self.layers):
            z, ld = layer.inverse(z)
            log_det = ld  # BUG-LINE
        base_log_prob = -0.5 * (z**2).sum(1) - math.log(2 * math.pi)
        return base_log_prob + log_det


flow = RealNVP()
opt = torch.optim.Adam(flow.parameters(), lr=1e-3)
for step in range(600):
    x = two_moons(256)
    loss = -flow.log_prob(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 200 == 0 or step == 599:
        print(f"step {step:4d}  nll {loss.item():.4f}")
