"""Spectrally normalized critic via torch.nn.utils.parametrizations.spectral_norm.

Source: https://github.com/pytorch/pytorch/pull/59564

The pull request reworks parametrizations.SpectralNorm: u and v are buffers updated
by power iteration in training mode, and the module's weight is recomputed as
W / sigma(W) every time it is accessed. This program trains a small critic that must
separate two 2-D distributions with a hinge loss while every Linear layer is spectrally
normalized. Unusual on purpose: the parametrization is registered before the optimizer
is built, so model.parameters() yields the underlying parametrizations.weight.original
tensors (the normalized weight itself is not a parameter); the power-iteration
buffers change in train mode but not in eval mode; and the critic's Lipschitz bound
is checked by printing the largest singular value of each effective weight.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm

torch.manual_seed(0)
torch.set_num_threads(2)

critic = nn.Sequential(
    spectral_norm(nn.Linear(2, 64)),
    nn.LeakyReLU(0.2),
    spectral_norm(nn.Linear(64, 64)),
    nn.LeakyReLU(0.2),
    spectral_norm(nn.Linear(64, 1)),
)
opt = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
print("trainable:", [n for n, _ in critic.named_parameters()][:2])

for step in range(1, 301):
    real = torch.randn(128, 2) * 0.5 + torch.tensor([1.0, 1.0])
    fake = torch.randn(128, 2) * 0.5 - torch.tensor([1.0, 0.0])
    loss = F.relu(1 - critic(real)).mean() + F.relu(1 + critic(fake)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        critic.eval()
        with torch.no_grad():
            sig = [torch.linalg.matrix_norm(critic[i].weight, ord=2).item() for i in (0, 2, 4)]
            gap = (critic(real).mean() - critic(fake).mean()).item()
        critic.train()
        print(f"step {step} hinge loss {loss.item():.4f} score gap {gap:.3f} sigmas {[round(s, 3) for s in sig]}")
