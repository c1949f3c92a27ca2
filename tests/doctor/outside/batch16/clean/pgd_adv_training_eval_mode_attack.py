"""PGD adversarial training with the attack run in eval mode inside the training step.

Unusual on purpose: inside every training iteration the model is switched to
model.eval() (so BatchNorm uses running stats and Dropout is off while the
perturbation is searched), the L_inf PGD perturbation is built with
torch.autograd.grad with respect to the INPUT only (parameters get no grads from
the attack), the delta is projected and detached every step, and the model is
put back to model.train() before the real forward/backward on the adversarial
batch. This follows the adversarial-training recipe of the blog post.

Source: https://davidstutz.de/47-9-robust-test-error-on-cifar10-with-adversarial-training-and-pytorch/
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.rand(512, 32)
y = (X[:, :16].mean(1) > X[:, 16:].mean(1)).long()
Xte = torch.rand(256, 32)
yte = (Xte[:, :16].mean(1) > Xte[:, 16:].mean(1)).long()

model = nn.Sequential(nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
eps, alpha, K = 0.03, 0.01, 4


def pgd(xb, yb):
    delta = torch.empty_like(xb).uniform_(-eps, eps)
    for _ in range(K):
        delta.requires_grad_(True)
        loss_adv = F.cross_entropy(model((xb + delta).clamp(0, 1)), yb)
        (g,) = torch.autograd.grad(loss_adv, delta)
        delta = (delta + alpha * g.sign()).clamp(-eps, eps).detach()
    return (xb + delta).clamp(0, 1)


for epoch in range(6):
    perm = torch.randperm(X.shape[0])
    for i in range(0, X.shape[0], 64):
        idx = perm[i : i + 64]
        xb, yb = X[idx], y[idx]
        model.eval()
        x_adv = pgd(xb, yb)
        model.train()
        loss = F.cross_entropy(model(x_adv), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    clean_acc = (model(Xte).argmax(1) == yte).float().mean().item()
    adv_acc = (model(pgd(Xte, yte)).argmax(1) == yte).float().mean().item()
    model.train()
    print(f"epoch {epoch} adv loss {loss.item():.4f} clean acc {clean_acc:.3f} robust acc {adv_acc:.3f}")
