"""Stochastic Weight Averaging with a BatchNorm MLP, evaluated straight after averaging.

AveragedModel averages parameters only (use_buffers=False by default); the
BatchNorm running_mean/running_var buffers of the SWA copy are just copied
from the current SGD iterate, so they describe the activations of the last
iterate, not of the averaged weights. The averaged model is evaluated without
first calling torch.optim.swa_utils.update_bn(loader, swa_model), so in eval
mode it normalises with mismatched statistics and its accuracy is well below
what SWA gives after the BN refresh (about 0.79 here vs about 0.92 with
update_bn). No error is raised.

Source: https://runebook.dev/en/docs/pytorch/optim/torch.optim.swa_utils.update_bn
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel
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
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
swa_sched = SWALR(opt, swa_lr=0.02, anneal_epochs=2)
swa_start = 4


def evaluate(net):
    net.eval()
    with torch.no_grad():
        acc = (net(Xte).argmax(1) == yte).float().mean().item()
    net.train()
    return acc


for epoch in range(8):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch >= swa_start:
        swa_model.update_parameters(model)
        swa_sched.step()
    print(f"epoch {epoch} loss {loss.item():.4f} model acc {evaluate(model):.3f}")

swa_acc = evaluate(swa_model)  # BUG-LINE
print(f"final model acc {evaluate(model):.3f} swa acc {swa_acc:.3f}")
