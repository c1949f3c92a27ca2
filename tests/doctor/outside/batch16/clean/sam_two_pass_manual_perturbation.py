"""Sharpness-Aware Minimisation written by hand inside the training loop.

Unusual on purpose: two forward/backward passes per optimizer step. After the
first backward the weights are moved under torch.no_grad() to w + rho*g/||g||,
the gradients are zeroed, a second forward/backward is done at the perturbed
point, the perturbation is subtracted again by hand, and only then the base
optimizer steps with the gradient from the second pass. This is the
first_step / closure / second_step calling scheme discussed for SAM.

Source: https://github.com/skorch-dev/skorch/issues/785
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 800, 20, 4
X = torch.randn(N, D)
y = (X @ torch.randn(D, C) + 0.5 * torch.randn(N, C)).argmax(1)
Xtr, ytr, Xte, yte = X[:600], y[:600], X[600:], y[600:]

model = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, C))
base_opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
rho = 0.05
params = [p for p in model.parameters() if p.requires_grad]

for step in range(100):
    idx = torch.randint(0, 600, (64,))
    xb, yb = Xtr[idx], ytr[idx]

    loss = F.cross_entropy(model(xb), yb)
    base_opt.zero_grad()
    loss.backward()

    with torch.no_grad():
        grad_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
        scale = rho / (grad_norm + 1e-12)
        e_ws = []
        for p in params:
            e_w = p.grad * scale
            p.add_(e_w)
            e_ws.append(e_w)

    base_opt.zero_grad()
    loss_sharp = F.cross_entropy(model(xb), yb)
    loss_sharp.backward()

    with torch.no_grad():
        for p, e_w in zip(params, e_ws):
            p.sub_(e_w)
    base_opt.step()
    base_opt.zero_grad()

    if step % 25 == 0 or step == 99:
        with torch.no_grad():
            acc = (model(Xte).argmax(1) == yte).float().mean().item()
        print(f"step {step:3d} loss {loss.item():.4f} sharp loss {loss_sharp.item():.4f} test acc {acc:.3f}")
