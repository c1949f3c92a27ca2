"""Stochastic Weight Averaging with SWALR and a final BatchNorm refresh (correct).

Unusual but correct: after ``swa_start`` the learning rate is switched to a
constant SWA learning rate by ``SWALR`` (instead of the cosine schedule), the
weights are averaged every epoch into an ``AveragedModel``, and, because the
averaged weights were never used in a forward pass during training, the
BatchNorm running statistics of the averaged model are recomputed with
``torch.optim.swa_utils.update_bn`` over the training data before evaluation.
This is exactly the extra pass over the data the SWA authors explain in the
report.

Source: https://github.com/timgaripov/swa/issues/7
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

EPOCHS, SWA_START = 8, 5
W_TRUE = torch.randn(10, 3)


def make(n):
    x = torch.randn(n, 10) * 3.0 + 1.5
    y = (torch.tanh((x - 1.5) @ W_TRUE) + 0.1 * torch.randn(n, 3)).argmax(-1)
    return x, y


def build():
    return nn.Sequential(
        nn.Linear(10, 64),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.Linear(64, 64),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.Linear(64, 3),
    )


@torch.no_grad()
def acc(model, x, y):
    model.eval()
    a = (model(x).argmax(-1) == y).float().mean().item()
    model.train()
    return a


def main():
    xtr, ytr = make(1024)
    xte, yte = make(512)
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=128, shuffle=True)
    model = build()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=SWA_START + 1)
    swa_model = AveragedModel(model)
    swa_sched = SWALR(opt, swa_lr=0.03, anneal_epochs=1, anneal_strategy="cos")
    for epoch in range(EPOCHS):
        tot = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            tot += loss.item() * len(xb)
        if epoch >= SWA_START:
            swa_model.update_parameters(model)
            swa_sched.step()
        else:
            cosine.step()
        print(f"epoch {epoch} loss {tot / len(xtr):.4f} lr {opt.param_groups[0]['lr']:.4f}")
    update_bn(loader, swa_model)
    print(f"SGD model test acc {acc(model, xte, yte):.3f}")
    print(f"SWA model test acc {acc(swa_model, xte, yte):.3f} (averaged {int(swa_model.n_averaged)} snapshots)")


if __name__ == "__main__":
    main()
