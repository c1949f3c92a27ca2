"""Gaussian VAE on synthetic 64-dimensional tabular data with an 8-dimensional latent. The ELBO needs the reconstruction term and the KL term on the same scale (both summed over their dimensions and averaged over the batch). The reconstruction term uses F.mse_loss with its default mean reduction, i.e. averaged over all 64 features as well, while the KL is summed over latent dimensions per sample; the KL is thus weighted ~64x too strongly, the encoder is driven towards the prior (posterior collapse) and reconstructions stay blurry. It trains without complaint and the total loss decreases, from the first step.
Source: https://github.com/zdebruine/MMVAE/pull/19
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
D, Z, B = 64, 8, 128
mix = torch.randn(Z, D)
data = torch.randn(2048, Z) @ mix + 0.1 * torch.randn(2048, D)
data = (data - data.mean(0)) / data.std(0)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(D, 128), nn.ReLU(), nn.Linear(128, 2 * Z))
        self.dec = nn.Sequential(nn.Linear(Z, 128), nn.ReLU(), nn.Linear(128, D))

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


model = VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(40):
    x = data[torch.randint(0, 2048, (B,))]
    x_hat, mu, logvar = model(x)
    recon = F.mse_loss(x_hat, x)  # BUG-LINE
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    loss = recon + kl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} recon {recon.item():.4f} kl {kl.item():.4f}")

with torch.no_grad():
    x_hat, mu, logvar = model(data[:512])
    print(
        "per-feature mse",
        round(F.mse_loss(x_hat, data[:512]).item(), 4),
        "kl/sample",
        round((-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)).mean().item(), 4),
    )
