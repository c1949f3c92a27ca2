"""VQ-VAE quantisation with the straight-through estimator: the decoder sees the nearest codebook vector, but
the gradient is copied to the encoder output via z + (q - z).detach(); the codebook is trained by the codebook
loss and the encoder by the commitment loss. The non-differentiable argmin is bypassed on purpose.

Source: https://arxiv.org/abs/1711.00937
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 8))
dec = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 20))
codebook = nn.Embedding(16, 8)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters(), *codebook.parameters()], lr=1e-3)
X = torch.randn(160, 20)
for i in range(0, 160, 32):
    xb = X[i : i + 32]
    z = enc(xb)
    idx = torch.cdist(z, codebook.weight).argmin(dim=1)
    q = codebook(idx)
    z_q = z + (q - z).detach()
    recon = dec(z_q)
    loss = F.mse_loss(recon, xb) + F.mse_loss(q, z.detach()) + 0.25 * F.mse_loss(z, q.detach())
    opt.zero_grad()
    loss.backward()
    opt.step()
