"""The loss is computed from detached numpy-style distances, backward raised "element 0 of tensors does not
require grad", and the fix applied was ``loss.requires_grad = True``. Backward now runs, but the loss is a leaf
with no graph: no parameter of the embedding network ever receives a gradient.

Source: https://github.com/roman-vygon/triplet_loss_kws/issues/6
"""

import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 16))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)


def triplet_loss(a, p, n, margin=1.0):
    d_ap = (a - p).pow(2).sum(1).detach()
    d_an = (a - n).pow(2).sum(1).detach()
    losses = torch.clamp(d_ap - d_an + margin, min=0)
    mean_losses = losses.mean()
    mean_losses.requires_grad = True  # BUG-LINE
    return mean_losses


for _step in range(6):
    base = torch.randn(32, 24)
    a, p, n = net(base), net(base + 0.1 * torch.randn(32, 24)), net(torch.randn(32, 24))
    loss = triplet_loss(a, p, n)
    opt.zero_grad()
    loss.backward()
    opt.step()
