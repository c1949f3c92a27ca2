"""Barlow Twins self-supervised pretraining on augmented sensor (time-series) windows.

Bug: before building the cross-correlation matrix, the two views' projections
are stacked and normalised with ONE batch-norm call, so both views share a
mean/std computed over 2N samples instead of each view being standardised over
its own batch. The cross-correlation is then no longer a correlation (it is not
invariant to an affine change of one view), the diagonal cannot reach 1 cleanly
and the redundancy term is biased. Fixed in lightly's BarlowTwinsLoss, which had
mixed the statistics of z_a and z_b in exactly this way.

Source: https://github.com/lightly-ai/lightly/pull/1806
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

T, C, D = 32, 3, 32


def make_windows(n):
    t = torch.arange(T).float()
    freq = torch.randint(1, 5, (n, 1, 1)).float() * 0.15
    phase = torch.rand(n, C, 1) * 6.28
    return torch.sin(freq * t + phase)


def augment(x):
    scale = 0.6 + 0.8 * torch.rand(x.shape[0], 1, 1)
    shift = torch.randint(-3, 4, (1,)).item()
    return torch.roll(x, shift, dims=2) * scale + 0.1 * torch.randn_like(x)


encoder = nn.Sequential(
    nn.Conv1d(C, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(16, 32)
)
projector = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, D))


def off_diagonal(m):
    n = m.shape[0]
    return m.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def barlow_loss(z_a, z_b, lambd=5e-3):
    n = z_a.shape[0]
    z = F.batch_norm(torch.cat([z_a, z_b]), None, None, training=True)  # BUG-LINE
    z_a, z_b = z[:n], z[n:]
    c = z_a.T @ z_b / n
    on = (torch.diagonal(c) - 1).pow(2).sum()
    off = off_diagonal(c).pow(2).sum()
    return on + lambd * off


params = list(encoder.parameters()) + list(projector.parameters())
opt = torch.optim.Adam(params, lr=2e-3)
data = make_windows(512)
for step in range(100):
    x = data[torch.randint(0, 512, (64,))]
    za = projector(encoder(augment(x)))
    zb = projector(encoder(augment(x)))
    loss = barlow_loss(za, zb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 99:
        print(f"step {step:3d} barlow {loss.item():.3f}")
