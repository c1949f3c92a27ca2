"""Sharpness-Aware Minimization: each optimizer step needs two forward/backward
passes. The first gradient is used to perturb the weights to w + e(w); the second
gradient, computed at the perturbed point, is applied after restoring the
original weights. The in-place weight edits are done under no_grad and the
base optimizer steps once per iteration, which is correct.

Source: https://arxiv.org/abs/2010.01412
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
rho = 0.05
x = torch.randn(96, 10)
y = x[:, :3].argmax(1)
for _step in range(5):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    params = [p for p in model.parameters() if p.grad is not None]
    grad_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
    eps = []
    with torch.no_grad():
        for p in params:
            e = rho * p.grad / (grad_norm + 1e-12)
            p.add_(e)
            eps.append(e)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p, e in zip(params, eps, strict=False):
            p.sub_(e)
    opt.step()
print("loss", loss.item())
