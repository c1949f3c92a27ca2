"""Gaussian VAE on synthetic tabular data with two deliberate departures from the plain ELBO: a linear KL warm-up (beta rises from 0 to 1 over the first steps) and "free bits", where the KL of each latent dimension (averaged over the batch) is clamped from below at lambda nats so that dimensions below the threshold receive no KL gradient. Reconstruction is a Gaussian log-likelihood summed over features and averaged over the batch, on the same scale as the per-sample KL. Unusual but correct: the KL weight starts at zero and the clamp intentionally zeroes some gradients.
Source: https://arxiv.org/abs/1606.04934
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
D, Z, B, FREE_BITS, WARMUP = 32, 6, 128, 0.1, 20
mix = torch.randn(Z, D)
data = torch.randn(2048, Z) @ mix + 0.1 * torch.randn(2048, D)
data = (data - data.mean(0)) / data.std(0)

enc = nn.Sequential(nn.Linear(D, 128), nn.ReLU(), nn.Linear(128, 2 * Z))
dec = nn.Sequential(nn.Linear(Z, 128), nn.ReLU(), nn.Linear(128, D))
optimizer = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=2e-3)

for step in range(40):
    x = data[torch.randint(0, 2048, (B,))]
    mu, logvar = enc(x).chunk(2, dim=-1)
    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
    x_hat = dec(z)
    recon = 0.5 * (x_hat - x).pow(2).sum(1).mean()
    kl_per_dim = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp())).mean(0)
    kl = torch.clamp(kl_per_dim, min=FREE_BITS).sum()
    beta = min(1.0, step / WARMUP)
    loss = recon + beta * kl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} recon {recon.item():.3f} kl {kl_per_dim.sum().item():.3f} beta {beta:.2f}")
