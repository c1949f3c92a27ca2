"""Two heads share a trunk and their losses are backpropagated separately: the first ``backward`` keeps the
graph with ``retain_graph=True`` so the second can reuse the shared trunk activations. Gradients from both
calls accumulate before the single optimizer step, which is the intended sum of the two losses.

Source: https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(10, 64), nn.ReLU())
head_a, head_b = nn.Linear(64, 3), nn.Linear(64, 1)
params = list(trunk.parameters()) + list(head_a.parameters()) + list(head_b.parameters())
opt = torch.optim.SGD(params, lr=0.05)
for _step in range(5):
    x = torch.randn(32, 10)
    y_cls, y_reg = (x[:, 0] > 0).long() + (x[:, 1] > 0).long(), x[:, 2:3]
    h = trunk(x)
    loss_a = F.cross_entropy(head_a(h), y_cls)
    loss_b = F.mse_loss(head_b(h), y_reg)
    opt.zero_grad()
    loss_a.backward(retain_graph=True)
    loss_b.backward()
    opt.step()
