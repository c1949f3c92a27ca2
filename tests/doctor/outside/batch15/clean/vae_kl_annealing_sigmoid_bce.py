"""VAE on synthetic binary 8x8 images with linear KL annealing (beta warm-up).

Unusual but correct: the decoder ends in a Sigmoid and the reconstruction term is
F.binary_cross_entropy on those probabilities (not the logits version); the KL weight
beta starts at 0 and is annealed to 1 over the first steps; reparameterisation draws
eps from a standard normal with randn_like and scales by std = exp(0.5 * logvar), the
form the pytorch/examples maintainers point to (fixed by the VAE paper's author). Loss
terms are summed over pixels/latents and averaged over the batch.

Source: https://github.com/pytorch/examples/issues/592
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D, Z = 64, 6
g = torch.Generator().manual_seed(1)
protos = (torch.rand(8, D, generator=g) > 0.5).float()
data = protos[torch.randint(0, 8, (1024,), generator=g)]
flip = torch.rand(1024, D, generator=g) < 0.05
data = torch.where(flip, 1 - data, data)

enc = nn.Sequential(nn.Linear(D, 128), nn.ReLU(), nn.Linear(128, 2 * Z))
dec = nn.Sequential(nn.Linear(Z, 128), nn.ReLU(), nn.Linear(128, D), nn.Sigmoid())
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=2e-3)
warmup = 100

for step in range(250):
    x = data[torch.randint(0, 1024, (64,))]
    mu, logvar = enc(x).chunk(2, dim=1)
    std = torch.exp(0.5 * logvar)
    z = mu + torch.randn_like(std) * std
    recon = dec(z)
    rec = F.binary_cross_entropy(recon, x, reduction="sum") / x.shape[0]
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.shape[0]
    beta = min(1.0, step / warmup)
    loss = rec + beta * kld
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} beta {beta:.2f} rec {rec.item():.3f} kld {kld.item():.3f}")
with torch.no_grad():
    samples = dec(torch.randn(16, Z))
print("final elbo-loss", (rec + kld).item(), "sample range", samples.min().item(), samples.max().item())
