"""Two task losses share one trunk and are backpropagated separately: the first backward uses
retain_graph=True so the shared part of the graph is still available for the second one. Gradients from both
calls accumulate in the trunk before a single optimizer step, which is equivalent to backward on the sum.

Source: https://pytorch.org/docs/stable/generated/torch.autograd.backward.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(12, 48), nn.ReLU())
head_a = nn.Linear(48, 3)
head_b = nn.Linear(48, 1)
params = list(trunk.parameters()) + list(head_a.parameters()) + list(head_b.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
X, ya = torch.randn(128, 12), torch.randint(0, 3, (128,))
yb = X[:, :1] * 0.5
for i in range(0, 128, 32):
    h = trunk(X[i : i + 32])
    loss_a = F.cross_entropy(head_a(h), ya[i : i + 32])
    loss_b = F.mse_loss(head_b(h), yb[i : i + 32])
    opt.zero_grad()
    loss_a.backward(retain_graph=True)
    loss_b.backward()
    opt.step()
