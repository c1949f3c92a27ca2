"""BYOL-style self-supervision: the online network (with predictor) is trained by the optimizer, while the
target network gets no gradient (its outputs are computed under ``no_grad``, its parameters have
requires_grad=False and are not in the optimizer) and is updated only by an exponential moving average.

Source: https://arxiv.org/abs/2006.07733
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
online = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32))
predictor = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
target = copy.deepcopy(online)
for p in target.parameters():
    p.requires_grad = False
opt = torch.optim.Adam(list(online.parameters()) + list(predictor.parameters()), lr=1e-3)


def byol_loss(p, z):
    return 2 - 2 * F.cosine_similarity(p, z, dim=-1).mean()


for _step in range(6):
    x = torch.randn(32, 16)
    v1, v2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
    p1, p2 = predictor(online(v1)), predictor(online(v2))
    with torch.no_grad():
        z1, z2 = target(v1), target(v2)
    loss = byol_loss(p1, z2) + byol_loss(p2, z1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for t, o in zip(target.parameters(), online.parameters(), strict=False):
            t.mul_(0.99).add_(o, alpha=0.01)
