"""SGDR: CosineAnnealingWarmRestarts stepped inside the batch loop with a fractional epoch.

Unusual on purpose: scheduler.step(epoch + i / iters) is called after every
batch with a float epoch argument, so the cosine decays smoothly within an
epoch and restarts (LR jumps back up) after T_0=2 and then T_0*T_mult=4
epochs. The jump of the learning rate at a restart is intended.

Source: https://docs.pytorch.org/docs/2.9/generated/torch.optim.lr_scheduler.CosineAnnealingWarmRestarts.html
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 640, 20, 4
X = torch.randn(N, D)
y = (X @ torch.randn(D, C)).argmax(1)

model = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, C))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=1e-4)
bs = 64
iters = (512 + bs - 1) // bs

for epoch in range(6):
    perm = torch.randperm(512)
    lrs = []
    for i in range(iters):
        idx = perm[i * bs : (i + 1) * bs]
        loss = F.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step(epoch + i / iters)
        lrs.append(opt.param_groups[0]["lr"])
    with torch.no_grad():
        acc = (model(X[512:]).argmax(1) == y[512:]).float().mean().item()
    print(f"epoch {epoch} lr {lrs[0]:.4f}->{lrs[-1]:.4f} loss {loss.item():.4f} val acc {acc:.3f}")
