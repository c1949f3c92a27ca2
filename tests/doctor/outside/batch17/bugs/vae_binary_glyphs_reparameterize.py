"""Gaussian-latent VAE on synthetic 8x8 binary glyphs.

Bug: the encoder's second head is treated as log-variance by the KL term
(-0.5 * sum(1 + logvar - mu^2 - exp(logvar))), but the reparameterization samples with
exp(logvar) as the standard deviation instead of exp(0.5 * logvar). The sampled noise
scale then no longer matches the posterior the KL is computed for, so the ELBO being
optimised is not the real one. Training runs, the loss falls, nothing errors. Reported
for the Keras VAE example, where z_mean + exp(z_log_std) * eps should have been
z_mean + exp(0.5 * z_log_var) * eps.

Source: https://github.com/keras-team/keras/issues/3283
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_PROTO, SIDE, LATENT = 6, 8, 4
protos = (torch.rand(N_PROTO, SIDE * SIDE) < 0.35).float()


def sample_batch(n):
    idx = torch.randint(0, N_PROTO, (n,))
    x = protos[idx].clone()
    flip = torch.rand_like(x) < 0.05
    return torch.where(flip, 1.0 - x, x)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(SIDE * SIDE, 64), nn.ReLU())
        self.mu = nn.Linear(64, LATENT)
        self.logvar = nn.Linear(64, LATENT)
        self.dec = nn.Sequential(nn.Linear(LATENT, 64), nn.ReLU(), nn.Linear(64, SIDE * SIDE))

    def reparameterize(self, mu, logvar):
        eps = torch.randn_like(mu)
        return mu + eps * torch.exp(logvar)  # BUG-LINE

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = self.reparameterize(mu, logvar)
        return self.dec(z), mu, logvar


model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)

for step in range(300):
    x = sample_batch(64)
    logits, mu, logvar = model(x)
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.size(0)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    loss = rec + kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        print(f"step {step:3d}  loss {loss.item():8.3f}  rec {rec.item():8.3f}  kl {kl.item():6.3f}")
