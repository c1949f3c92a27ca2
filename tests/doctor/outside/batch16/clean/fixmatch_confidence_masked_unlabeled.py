"""FixMatch-style semi-supervised training on synthetic data.

Unusual on purpose: labeled, weakly-augmented unlabeled and strongly-augmented
unlabeled inputs are concatenated into ONE forward pass (so BatchNorm sees the
whole batch, as in the reference implementation discussed in the issue); the
model's own detached predictions on the weak view become hard pseudo-labels
for the strong view; and unlabeled samples whose confidence is below the
threshold are dropped from the loss by a 0/1 mask (the mask can be all zeros
early on, which is intended).

Source: https://github.com/kekmodel/FixMatch-pytorch/issues/7
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D, C = 20, 4
centers = 0.9 * torch.randn(C, D)


def sample(n):
    yy = torch.randint(0, C, (n,))
    return centers[yy] + torch.randn(n, D), yy


X_l, y_l = sample(40)
X_u, y_u_hidden = sample(2000)
X_te, y_te = sample(500)


def weak(x):
    return x + 0.1 * torch.randn_like(x)


def strong(x):
    keep = (torch.rand_like(x) > 0.3).float()
    return (x + 0.8 * torch.randn_like(x)) * keep


model = nn.Sequential(nn.Linear(D, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, C))
opt = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, nesterov=True)
threshold, lambda_u, mu, B = 0.95, 1.0, 4, 16

for step in range(100):
    li = torch.randint(0, X_l.shape[0], (B,))
    ui = torch.randint(0, X_u.shape[0], (mu * B,))
    x_l, y_b = weak(X_l[li]), y_l[li]
    u = X_u[ui]
    inputs = torch.cat([x_l, weak(u), strong(u)])
    logits = model(inputs)
    logits_x = logits[:B]
    logits_u_w, logits_u_s = logits[B:].chunk(2)

    Lx = F.cross_entropy(logits_x, y_b)
    pseudo = torch.softmax(logits_u_w.detach(), dim=-1)
    max_probs, targets_u = pseudo.max(dim=-1)
    mask = max_probs.ge(threshold).float()
    Lu = (F.cross_entropy(logits_u_s, targets_u, reduction="none") * mask).mean()
    loss = Lx + lambda_u * Lu

    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 99:
        model.eval()
        with torch.no_grad():
            acc = (model(X_te).argmax(1) == y_te).float().mean().item()
        model.train()
        print(f"step {step:3d} Lx {Lx.item():.4f} Lu {Lu.item():.4f} mask {mask.mean().item():.2f} test acc {acc:.3f}")
