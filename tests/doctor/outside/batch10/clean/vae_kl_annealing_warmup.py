"""Variational autoencoder on synthetic 8x8 binary bar images trained with KL-cost annealing: the weight of the
KL term starts at exactly 0 and rises linearly to 1 over the first 100 steps, so the very first updates are
pure reconstruction (an autoencoder) on purpose, which counters posterior collapse. The reparameterisation
uses std = exp(0.5 * logvar), consistent with the analytic KL for a log-variance parameterisation.
Source: https://arxiv.org/abs/1511.06349
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def bars(n):
    x = torch.zeros(n, 8, 8)
    for i in range(n):
        x[i, torch.rand(8) < 0.25, :] = 1.0
        x[i, :, torch.rand(8) < 0.25] = 1.0
    return x.view(n, 64)


enc = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 12))
dec = nn.Sequential(nn.Linear(6, 128), nn.ReLU(), nn.Linear(128, 64))
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=2e-3)
data = bars(1024)
ANNEAL = 100
for step in range(200):
    x = data[torch.randint(0, 1024, (64,))]
    mu, logvar = enc(x).chunk(2, dim=1)
    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
    rec = F.binary_cross_entropy_with_logits(dec(z), x, reduction="sum") / 64
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / 64
    beta = min(1.0, step / ANNEAL)
    loss = rec + beta * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} beta {beta:.2f} rec {rec.item():.3f} kl {kl.item():.3f}")
print("final ELBO-loss:", round((rec + kl).item(), 3))
