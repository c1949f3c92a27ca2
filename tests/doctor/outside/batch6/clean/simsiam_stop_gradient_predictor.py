"""SimSiam: two augmented views go through a shared encoder and projector; a predictor head maps one branch to
the other, and the target branch is ``detach()``-ed (stop-gradient). Half of each symmetric loss term carries
no gradient on purpose; that asymmetry is what prevents collapse without negatives.

Source: https://github.com/facebookresearch/simsiam
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 32), nn.BatchNorm1d(32))
predictor = nn.Sequential(nn.Linear(32, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 32))
opt = torch.optim.SGD(
    list(encoder.parameters()) + list(predictor.parameters()), lr=0.05, momentum=0.9, weight_decay=1e-4
)


def D(p, z):
    return -F.cosine_similarity(p, z.detach(), dim=-1).mean()


data = torch.randn(256, 32)
for i in range(0, 256, 32):
    x = data[i : i + 32]
    x1, x2 = x + 0.2 * torch.randn_like(x), x * (1 + 0.1 * torch.randn_like(x))
    z1, z2 = encoder(x1), encoder(x2)
    p1, p2 = predictor(z1), predictor(z2)
    loss = 0.5 * D(p1, z2) + 0.5 * D(p2, z1)
    opt.zero_grad()
    loss.backward()
    opt.step()
