"""A VQ autoencoder computes its codebook loss as ``mse(z_q, z_e.detach())`` where ``z_q`` is the
straight-through output ``z_e + (z - z_e).detach()``. The codebook lookup only appears inside ``detach()``, so
the codebook embedding never receives a gradient and stays at its initialisation while reconstruction loss
still goes down.

Source: https://github.com/showlab/Olaf-World/issues/8
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
dec = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
codebook = nn.Embedding(32, 8)
params = list(enc.parameters()) + list(dec.parameters()) + list(codebook.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
data = torch.randn(256, 16)
for i in range(0, 256, 32):
    x = data[i : i + 32]
    z_e = enc(x)
    idx = torch.cdist(z_e, codebook.weight).argmin(1)
    z = codebook(idx)
    z_q = z_e + (z - z_e).detach()
    recon = dec(z_q)
    codebook_loss = F.mse_loss(z_q, z_e.detach())  # BUG-LINE
    commit_loss = F.mse_loss(z_e, z.detach())
    loss = F.mse_loss(recon, x) + codebook_loss + 0.25 * commit_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
