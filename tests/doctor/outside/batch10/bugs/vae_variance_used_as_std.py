"""Variational autoencoder on synthetic 8x8 binary "bar" images. The encoder outputs mu and logvar and the KL
term is the usual closed form for a log-variance parameterisation, but the reparameterisation samples
z = mu + eps * exp(logvar), i.e. it scales the noise by the variance instead of the standard deviation
exp(0.5 * logvar). The sampled posterior is then not the posterior the KL term regularises: the objective is
no longer the ELBO of the model being sampled. Every tensor has the right shape and values stay finite, so the
run completes without any message.
Source: https://github.com/rachtsingh/ibp_vae/issues/3
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def bars(n):
    x = torch.zeros(n, 8, 8)
    for i in range(n):
        rows = torch.rand(8) < 0.25
        cols = torch.rand(8) < 0.25
        x[i, rows, :] = 1.0
        x[i, :, cols] = 1.0
    return x.view(n, 64)


class VAE(nn.Module):
    def __init__(self, zdim=6):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 128), nn.ReLU())
        self.mu = nn.Linear(128, zdim)
        self.logvar = nn.Linear(128, zdim)
        self.dec = nn.Sequential(nn.Linear(zdim, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        std = torch.exp(logvar)  # BUG-LINE
        z = mu + torch.randn_like(std) * std
        return self.dec(z), mu, logvar


data = bars(1024)
model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(150):
    x = data[torch.randint(0, 1024, (64,))]
    logits, mu, logvar = model(x)
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.size(0)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    loss = rec + kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} rec {rec.item():.3f} kl {kl.item():.3f}")
print("final rec", round(rec.item(), 3), "kl", round(kl.item(), 3), "mean logvar", round(logvar.mean().item(), 3))
