"""OneCycleLR stepped after every batch, with total steps taken from len(loader).

Unusual on purpose: the learning rate (and SGD momentum, cycled inversely)
changes after EVERY optimizer step, not per epoch; the loader keeps a short
last batch (drop_last=False) and steps_per_epoch=len(loader) counts it, so the
schedule ends exactly on the final batch. The optimizer's own lr argument is
overwritten by the scheduler (max_lr/div_factor) at construction.

Source: https://runebook.dev/en/docs/pytorch/generated/torch.optim.lr_scheduler.onecyclelr/torch.optim.lr_scheduler.OneCycleLR
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import OneCycleLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 700, 20, 4
X = torch.randn(N, D)
y = (X @ torch.randn(D, C)).argmax(1)
loader = DataLoader(TensorDataset(X[:600], y[:600]), batch_size=64, shuffle=True, drop_last=False)

model = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, C))
opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
epochs = 8
sched = OneCycleLR(opt, max_lr=0.2, epochs=epochs, steps_per_epoch=len(loader), pct_start=0.3)

for epoch in range(epochs):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    with torch.no_grad():
        acc = (model(X[600:]).argmax(1) == y[600:]).float().mean().item()
    g = opt.param_groups[0]
    print(f"epoch {epoch} lr {g['lr']:.5f} momentum {g['momentum']:.3f} loss {loss.item():.4f} val acc {acc:.3f}")
