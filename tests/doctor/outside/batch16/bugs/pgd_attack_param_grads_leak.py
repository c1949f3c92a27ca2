"""PGD adversarial training where the optimizer's zero_grad is called before the attack.

The attack builds the perturbation with `loss_adv.backward()` (not
torch.autograd.grad on the input only), so every attack iteration also
accumulates gradients into the model parameters. Because `opt.zero_grad()` is
placed before the attack loop instead of right before the training backward,
the parameter update silently contains the sum of K attack gradients plus the
training gradient: the effective step is ~(K+1) times larger and is partly
computed on intermediate perturbations. No error, the loss still moves.

Source: https://github.com/P2333/Bag-of-Tricks-for-AT/issues/8
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.rand(512, 32)
y = (X[:, :16].mean(1) > X[:, 16:].mean(1)).long()

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
eps, alpha, K = 0.05, 0.02, 5

for epoch in range(6):
    perm = torch.randperm(X.shape[0])
    for i in range(0, X.shape[0], 64):
        idx = perm[i : i + 64]
        xb, yb = X[idx], y[idx]
        opt.zero_grad()  # BUG-LINE
        delta = torch.zeros_like(xb).uniform_(-eps, eps).requires_grad_(True)
        for _ in range(K):
            loss_adv = F.cross_entropy(model((xb + delta).clamp(0, 1)), yb)
            loss_adv.backward()
            with torch.no_grad():
                delta.add_(alpha * delta.grad.sign()).clamp_(-eps, eps)
            delta.grad.zero_()
        out = model((xb + delta.detach()).clamp(0, 1))
        loss = F.cross_entropy(out, yb)
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = (model(X).argmax(1) == y).float().mean().item()
    print(f"epoch {epoch} adv loss {loss.item():.4f} clean acc {acc:.3f}")
