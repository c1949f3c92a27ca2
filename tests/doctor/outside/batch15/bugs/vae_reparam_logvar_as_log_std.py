"""VAE on synthetic 8x8 binary-ish images.

The encoder emits `logvar` (log of the variance) and the KL term is written for a
log-variance, -0.5*sum(1 + logvar - mu^2 - exp(logvar)). The reparameterisation step,
however, uses exp(logvar) as the standard deviation instead of exp(0.5*logvar), so the
noise scale actually sampled is the variance. Sampling and KL no longer describe the same
posterior; the run completes and the loss falls, but the optimised objective is not the
ELBO of the model that is sampled.

Source: https://github.com/alecGraves/BVAE-tf/issues/7
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D, Z = 64, 8
g = torch.Generator().manual_seed(1)
protos = (torch.rand(6, D, generator=g) > 0.5).float()
idx = torch.randint(0, 6, (1024,), generator=g)
data = (protos[idx] * 0.9 + 0.05 + 0.05 * torch.rand(1024, D, generator=g)).clamp(0, 1)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(D, 128), nn.ReLU())
        self.mu = nn.Linear(128, Z)
        self.logvar = nn.Linear(128, Z)
        self.dec = nn.Sequential(nn.Linear(Z, 128), nn.ReLU(), nn.Linear(128, D))

    def reparameterize(self, mu, logvar):
        std = torch.exp(logvar)  # BUG-LINE
        eps = torch.randn_like(std)
        return mu + eps * std

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = self.reparameterize(mu, logvar)
        return torch.sigmoid(self.dec(z)), mu, logvar


model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(300):
    x = data[torch.randint(0, len(data), (64,))]
    recon, mu, logvar = model(x)
    bce = F.binary_cross_entropy(recon, x, reduction="sum") / x.shape[0]
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.shape[0]
    loss = bce + kld
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.3f} bce {bce.item():.3f} kld {kld.item():.3f}")
print("final loss", loss.item())
