"""Sharpness-Aware Minimization: two forward/backward passes per optimizer step.

The first backward computes gradients at w, the weights are moved to the
adversarial point w + e(w), a second forward/backward computes the gradient
there, the perturbation is undone and only then the base optimizer steps.
Two backward passes and restoring the weights are intentional.
Source: https://github.com/davda54/sam/issues/8
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
RHO = 0.05
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
base_opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))
loss_fn = nn.CrossEntropyLoss()

for _step in range(6):
    base_opt.zero_grad()
    loss_fn(model(x), y).backward()
    params = [p for p in model.parameters() if p.grad is not None]
    grad_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
    eps = []
    with torch.no_grad():
        for p in params:
            e = p.grad * (RHO / (grad_norm + 1e-12))
            p.add_(e)
            eps.append(e)
    base_opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p, e in zip(params, eps, strict=False):
            p.sub_(e)
    base_opt.step()
print(f"sam loss {loss.item():.4f}")
