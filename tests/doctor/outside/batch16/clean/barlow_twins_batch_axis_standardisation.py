"""Barlow Twins pretraining of a small audio-frame encoder, then a linear probe.

Unusual but correct: the projections of each view are standardised ALONG THE
BATCH AXIS (mean/std over dim=0, per feature), separately for view A and view B,
and the D x D cross-correlation matrix is z_a.T @ z_b / N. Normalising over the
batch dimension is intended: the loss decorrelates features using batch
statistics, as the Barlow Twins author explains (the cross-correlation matrix is
computed from all samples in the batch). The batch is therefore kept reasonably
large (128) and std uses the biased estimator.

Source: https://github.com/facebookresearch/barlowtwins/issues/10
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_MELS, T, N_CLS, D = 16, 20, 6, 32
protos = torch.randn(N_CLS, N_MELS, 1)


def make(n):
    y = torch.randint(0, N_CLS, (n,))
    return protos[y] + 0.5 * torch.randn(n, N_MELS, T), y


def augment(x):
    gain = 0.7 + 0.6 * torch.rand(x.shape[0], 1, 1)
    mask = (torch.rand(x.shape[0], N_MELS, 1) > 0.15).float()  # frequency masking
    return x * gain * mask + 0.2 * torch.randn_like(x)


enc = nn.Sequential(nn.Conv1d(N_MELS, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten())
proj = nn.Sequential(nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, D))


def standardise(z):
    return (z - z.mean(dim=0)) / (z.std(dim=0, unbiased=False) + 1e-5)


def barlow(za, zb, lambd=5e-3):
    n = za.shape[0]
    c = standardise(za).T @ standardise(zb) / n
    on = (torch.diagonal(c) - 1).pow(2).sum()
    off = (c - torch.diag(torch.diagonal(c))).pow(2).sum()
    return on + lambd * off


x_pool, y_pool = make(1024)
opt = torch.optim.Adam([*enc.parameters(), *proj.parameters()], lr=2e-3)
for step in range(60):
    x = x_pool[torch.randint(0, 1024, (128,))]
    loss = barlow(proj(enc(augment(x))), proj(enc(augment(x))))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0 or step == 59:
        print(f"step {step:3d} barlow {loss.item():.3f}")

with torch.no_grad():
    feats = enc(x_pool)
probe = nn.Linear(32, N_CLS)
popt = torch.optim.Adam(probe.parameters(), lr=1e-2)
for _ in range(60):
    ploss = F.cross_entropy(probe(feats), y_pool)
    popt.zero_grad()
    ploss.backward()
    popt.step()
print("linear probe accuracy", (probe(feats).argmax(1) == y_pool).float().mean().item())
