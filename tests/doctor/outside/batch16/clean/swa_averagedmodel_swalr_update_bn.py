"""Stochastic Weight Averaging done as in the PyTorch 1.6 SWA announcement.

Unusual on purpose: a second model (AveragedModel) is updated by hand each
epoch after swa_start, the LR schedule switches from CosineAnnealingLR to SWALR
mid-training, and the BatchNorm statistics of the averaged model are recomputed
with update_bn over the training loader before it is evaluated (the averaged
weights never receive gradients themselves).

Source: https://pytorch.org/blog/pytorch-1.6-now-includes-stochastic-weight-averaging/
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 1024, 16, 3
X = 0.5 * torch.randn(N, D) + 6.0
y = ((X - 6.0) @ torch.randn(D, C)).argmax(1)
Xte, yte = X[768:], y[768:]
loader = DataLoader(TensorDataset(X[:768], y[:768]), batch_size=64, shuffle=True)

model = nn.Sequential(
    nn.Linear(D, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, C)
)
swa_model = AveragedModel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
epochs, swa_start = 8, 4
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=swa_start)
swa_sched = SWALR(opt, swa_lr=0.02, anneal_epochs=2)


def evaluate(net):
    net.eval()
    with torch.no_grad():
        acc = (net(Xte).argmax(1) == yte).float().mean().item()
    net.train()
    return acc


for epoch in range(epochs):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch >= swa_start:
        swa_model.update_parameters(model)
        swa_sched.step()
    else:
        sched.step()
    print(f"epoch {epoch} lr {opt.param_groups[0]['lr']:.4f} loss {loss.item():.4f} acc {evaluate(model):.3f}")

update_bn(loader, swa_model)
print(f"final model acc {evaluate(model):.3f} swa acc {evaluate(swa_model):.3f}")
