"""Train a siamese embedding network with the Hadsell-Chopra-LeCun contrastive loss on pairs of
synthetic 20-D samples from 8 classes. The pair builder marks same-class pairs with label 1 and
different-class pairs with 0, but the loss is written for the paper's convention (0 = similar,
1 = dissimilar): (1 - y) * d^2 + y * max(margin - d, 0)^2. Same-class pairs are therefore pushed
apart up to the margin and different-class pairs are pulled together. The loss is well defined
and decreases, so nothing signals the error.

Source: https://github.com/keras-team/keras/issues/16935
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
K, D = 8, 20
centers = torch.randn(K, D) * 2


def sample(n):
    c = torch.randint(0, K, (n,))
    return centers[c] + torch.randn(n, D), c


def make_pairs(n):
    x1, c1 = sample(n)
    same = torch.rand(n) < 0.5
    c2 = torch.where(same, c1, (c1 + torch.randint(1, K, (n,))) % K)
    x2 = centers[c2] + torch.randn(n, D)
    return x1, x2, (c1 == c2).float()


def contrastive_loss(d, y, margin=1.0):
    return ((1 - y) * d.pow(2) + y * F.relu(margin - d).pow(2)).mean()


net = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 16))
opt = torch.optim.Adam(net.parameters(), lr=2e-3)
for step in range(150):
    x1, x2, y = make_pairs(128)
    d = F.pairwise_distance(net(x1), net(x2))
    loss = contrastive_loss(d, y)  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    x1, x2, y = make_pairs(1000)
    d = F.pairwise_distance(net(x1), net(x2))
    same_d, diff_d = d[y == 1].mean().item(), d[y == 0].mean().item()
print("final loss", round(loss.item(), 4), "mean dist same", round(same_d, 3), "diff", round(diff_d, 3))
