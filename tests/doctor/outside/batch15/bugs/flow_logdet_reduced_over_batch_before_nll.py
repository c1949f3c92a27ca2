"""Affine coupling flow whose per-sample log-determinant is summed over the batch.

Source: https://github.com/wohlert/semi-supervised-pytorch/issues/21

The report: the log-density is computed as log_gaussian(z) - sum(log_det_z) where
log_det_z already holds one value per sample, so sum() collapses it over the batch
into a scalar that is then broadcast back onto every sample. Nothing errors, but each
sample's log-likelihood now carries the whole batch's Jacobian term, i.e. the
log-det is weighted batch_size times too much relative to the base density. The flow
trains towards maximizing volume expansion instead of fitting the data; the reported
"nll" keeps falling (it becomes very negative) while the fit of the base density gets
worse.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

LOG_2PI = math.log(2 * math.pi)


def sample_data(n):
    theta = torch.rand(n) * math.pi
    r = 1.0 + 0.1 * torch.randn(n)
    return torch.stack([r * torch.cos(theta), r * torch.sin(theta) - 0.3], 1) * 2


def base_log_prob(z):
    return -0.5 * (z.pow(2).sum(dim=1) + 2 * LOG_2PI)


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


flow = nn.ModuleList([Coupling(m) for m in [torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])] * 2])
opt = torch.optim.Adam(flow.parameters(), lr=2e-3)

for step in range(1, 201):
    x = sample_data(256)
    z, total_logdet = x, torch.zeros(x.shape[0])
    for layer in flow:
        z, ld = layer(z)
        total_logdet = total_logdet + ld
    log_px = base_log_prob(z) + total_logdet.sum()  # BUG-LINE
    nll = -log_px.mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step} nll {nll.item():.4f} base logp {base_log_prob(z).mean().item():.4f}")
