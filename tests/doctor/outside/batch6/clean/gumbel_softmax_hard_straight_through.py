"""A discrete latent is sampled with ``F.gumbel_softmax(logits, tau, hard=True)``: the forward pass uses an exact
one-hot vector, while the backward pass uses the gradient of the soft relaxation (straight-through). The
non-differentiable-looking one-hot still passes gradient to the encoder by construction.

Source: https://pytorch.org/docs/stable/generated/torch.nn.functional.gumbel_softmax.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 10))
decoder = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 16))
opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-3)
data = torch.randn(256, 16)
for i in range(0, 256, 32):
    x = data[i : i + 32]
    logits = encoder(x)
    code = F.gumbel_softmax(logits, tau=0.8, hard=True)
    q = F.softmax(logits, dim=1)
    kl = (q * (torch.log(q + 1e-9) + torch.log(torch.tensor(10.0)))).sum(1).mean()
    loss = F.mse_loss(decoder(code), x) + 0.01 * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
