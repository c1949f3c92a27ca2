"""Bernoulli VAE on synthetic 8x8 binary glyphs, decoder ends in a Sigmoid.

Clean program. Unusual on purpose: the decoder outputs probabilities (nn.Sigmoid as the
last layer) and the reconstruction term is nn.functional.binary_cross_entropy on those
probabilities with reduction="sum" (summed over pixels, divided by the batch size); the
encoder's second head is log-variance and the reparameterization correctly uses
std = exp(0.5 * logvar); the KL weight beta is warmed up linearly from exactly 0 over the
first 100 steps (KL annealing), so early steps deliberately ignore the KL term. The
report asks why the reparameterization uses exp(); here exp(0.5 * logvar) turns the
log-variance into a standard deviation, matching the KL formula.

Source: https://github.com/y0ast/VAE-Torch/issues/3
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_PROTO, PIX, LATENT = 6, 64, 4
protos = (torch.rand(N_PROTO, PIX) < 0.35).float()


def sample_batch(n):
    x = protos[torch.randint(0, N_PROTO, (n,))]
    flip = torch.rand_like(x) < 0.05
    return torch.where(flip, 1.0 - x, x)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(PIX, 64), nn.ReLU(), nn.Linear(64, 2 * LATENT))
        self.dec = nn.Sequential(nn.Linear(LATENT, 64), nn.ReLU(), nn.Linear(64, PIX), nn.Sigmoid())

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.dec(z), mu, logvar


model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(300):
    x = sample_batch(64)
    probs, mu, logvar = model(x)
    rec = F.binary_cross_entropy(probs, x, reduction="sum") / x.size(0)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    beta = min(1.0, step / 100)
    loss = rec + beta * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        print(f"step {step:3d}  beta {beta:.2f}  loss {loss.item():8.3f}  rec {rec.item():8.3f}  kl {kl.item():6.3f}")
