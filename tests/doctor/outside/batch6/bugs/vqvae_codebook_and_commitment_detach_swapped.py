"""The VQ-VAE loss has its ``.detach()`` calls on the wrong side: the "codebook" term ``mse(z_q, z_e.detach())``
is written as ``mse(z_q.detach(), z_e)`` and the commitment term the other way round, so the full-weight term
pulls the encoder towards the codes and the codebook only gets the 0.25-weighted term. It trains silently but
the codebook learns four times slower than intended and the encoder is over-committed.

Source: https://github.com/MishaLaskin/vqvae/pull/20
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
dec = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
codebook = nn.Embedding(32, 8)
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()) + list(codebook.parameters()), lr=1e-3)
data = torch.randn(256, 16)
beta = 0.25
for i in range(0, 256, 32):
    x = data[i : i + 32]
    z_e = enc(x)
    z_q = codebook(torch.cdist(z_e, codebook.weight).argmin(1))
    embedding_loss = F.mse_loss(z_q.detach(), z_e) + beta * F.mse_loss(z_q, z_e.detach())  # BUG-LINE
    z_st = z_e + (z_q - z_e).detach()
    loss = F.mse_loss(dec(z_st), x) + embedding_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
