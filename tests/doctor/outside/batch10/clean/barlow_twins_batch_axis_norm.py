"""Barlow Twins self-supervised pre-training on synthetic vectors with two random views per sample. The
projector outputs are standardised along the *batch* dimension (mean and std over dim 0) before forming the
D x D cross-correlation matrix between the two views; the loss pushes its diagonal to 1 and, with weight
lambda, its off-diagonal entries to 0. Normalising over the batch axis is the method's definition here, not
the per-vector L2 normalisation used by contrastive losses.
Source: https://arxiv.org/abs/2103.03230
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
DIN, C, PD, LAMBDA = 32, 8, 64, 5e-3
protos = torch.randn(C, DIN)


def views(n):
    y = torch.randint(0, C, (n,))
    base = protos[y] + 0.5 * torch.randn(n, DIN)
    aug = lambda x: x * (torch.rand(n, DIN) > 0.2).float() + 0.3 * torch.randn(n, DIN)
    return aug(base), aug(base), y


backbone = nn.Sequential(nn.Linear(DIN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
projector = nn.Sequential(nn.Linear(64, PD), nn.BatchNorm1d(PD), nn.ReLU(), nn.Linear(PD, PD))
opt = torch.optim.Adam(list(backbone.parameters()) + list(projector.parameters()), lr=1e-3)
for step in range(200):
    x1, x2, _ = views(128)
    z1, z2 = projector(backbone(x1)), projector(backbone(x2))
    z1 = (z1 - z1.mean(0)) / (z1.std(0) + 1e-5)
    z2 = (z2 - z2.mean(0)) / (z2.std(0) + 1e-5)
    c = z1.T @ z2 / z1.shape[0]
    on_diag = (torch.diagonal(c) - 1).pow(2).sum()
    off_diag = (c - torch.diag(torch.diagonal(c))).pow(2).sum()
    loss = on_diag + LAMBDA * off_diag
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.3f} on {on_diag.item():.3f} off {off_diag.item():.3f}")
with torch.no_grad():
    xa, _, ya = views(400)
    xb, _, yb = views(400)
    ea, eb = F.normalize(backbone(xa), dim=1), F.normalize(backbone(xb), dim=1)
    print("kNN probe acc:", round((yb[(ea @ eb.T).argmax(1)] == ya).float().mean().item(), 4))
