"""Gaussian VAE on synthetic low-dimensional-manifold data with KL warm-up (clean).

Unusual but correct: both the reconstruction term and the KL term are summed
over their dimensions per sample and then averaged over the batch (so their
relative scale is that of the ELBO), the KL weight is annealed linearly from 0
to 1 over the first steps to avoid early posterior collapse, the
reparameterisation uses std = exp(0.5 * logvar), and the encoder output is split
into mean and log-variance halves. The active latent units are reported.

Source: https://github.com/mkusner/grammarVAE/issues/2
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D_X, D_Z_TRUE, D_Z = 4000, 20, 3, 8
mixing = torch.randn(D_Z_TRUE, D_X)
z_true = torch.randn(N, D_Z_TRUE)
data = torch.tanh(z_true @ mixing) + 0.05 * torch.randn(N, D_X)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(D_X, 64), nn.ReLU(), nn.Linear(64, 2 * D_Z))
        self.dec = nn.Sequential(nn.Linear(D_Z, 64), nn.ReLU(), nn.Linear(64, D_X))

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
warmup = 400
for step in range(1200):
    x = data[torch.randint(0, N, (128,))]
    recon, mu, logvar = model(x)
    rec = F.mse_loss(recon, x, reduction="none").sum(1).mean() / (2 * 0.05)
    kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp())).sum(1).mean()
    beta = min(1.0, step / warmup)
    loss = rec + beta * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 200 == 0 or step == 1199:
        with torch.no_grad():
            _, mu_all, _ = model(data)
            active = (mu_all.var(0) > 0.01).sum().item()
        print(f"step {step:4d}  beta {beta:.2f}  rec {rec.item():8.3f}  kl {kl.item():7.3f}  active units {active}")
