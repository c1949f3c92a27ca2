"""SimSiam: two augmented views go through the same encoder; the predictor output of one view is matched to the
*detached* projection of the other (stop-gradient), symmetrically. The detach on the target branch is the
essential ingredient that prevents collapse, not a mistake.

Source: https://arxiv.org/abs/2011.10566
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(24, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 32))
predictor = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 32))
opt = torch.optim.SGD([*encoder.parameters(), *predictor.parameters()], lr=0.05, momentum=0.9)


def d(p, z):
    return -F.cosine_similarity(p, z.detach(), dim=-1).mean()


X = torch.randn(160, 24)
for i in range(0, 160, 32):
    xb = X[i : i + 32]
    z1 = encoder(xb + 0.1 * torch.randn_like(xb))
    z2 = encoder(xb * (1 + 0.1 * torch.randn_like(xb)))
    loss = 0.5 * d(predictor(z1), z2) + 0.5 * d(predictor(z2), z1)
    opt.zero_grad()
    loss.backward()
    opt.step()
