"""Train a small fully connected VAE on synthetic 2-D "blob" images (16x16) with a Gaussian
encoder and Bernoulli decoder. The encoder outputs a mean and a log-variance, but the
reparameterisation samples z = mu + exp(logvar) * eps, i.e. it uses the variance as if it were the
standard deviation. The KL term is still written for log-variance, so the sampling noise and the
KL term describe two different posteriors; the ELBO that is optimised is not the model's ELBO.
Nothing fails: the loss is finite and decreases, only the posterior scale is wrong from the first step.

Source: https://github.com/rishikksh20/vae_tacotron2/issues/3
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def make_images(n):
    yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    cx = torch.randint(3, 13, (n, 1, 1)).float()
    cy = torch.randint(3, 13, (n, 1, 1)).float()
    img = torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 6.0)
    return (img > 0.5).float().view(n, -1)


class VAE(nn.Module):
    def __init__(self, d=256, h=128, z=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, h), nn.ReLU())
        self.mu = nn.Linear(h, z)
        self.logvar = nn.Linear(h, z)
        self.dec = nn.Sequential(nn.Linear(z, h), nn.ReLU(), nn.Linear(h, d))

    def reparameterize(self, mu, logvar):
        eps = torch.randn_like(mu)
        return mu + torch.exp(logvar) * eps  # BUG-LINE

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = self.reparameterize(mu, logvar)
        return self.dec(z), mu, logvar


data = make_images(512)
model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(60):
    x = data[torch.randint(0, 512, (64,))]
    logits, mu, logvar = model(x)
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.size(0)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    loss = rec + kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} rec {rec.item():.2f} kl {kl.item():.2f}")
with torch.no_grad():
    _, mu, logvar = model(data[:256])
print("final loss", round(loss.item(), 3), "mean posterior std", round(logvar.mul(0.5).exp().mean().item(), 4))
