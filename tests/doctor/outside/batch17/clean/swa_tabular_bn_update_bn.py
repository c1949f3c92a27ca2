"""Stochastic Weight Averaging for a tabular classifier with BatchNorm, using torch.optim.swa_utils.

Unusual on purpose: two models live side by side. The AveragedModel copy is never given to the
optimizer and never receives gradients; its weights are a running average of the SGD iterates
(update_parameters after each SWA-phase epoch). The learning-rate schedule switches from cosine
annealing to a constant SWALR at the SWA start epoch, so the lr stays flat by design at the end.
Because the averaged weights never saw the data, torch.optim.swa_utils.update_bn makes one pass
over the training loader in train mode to recompute the BatchNorm running statistics before
evaluation. Modelled on the PR that added AveragedModel, SWALR and update_bn to PyTorch and whose
example shows this exact sequence.

Source: https://github.com/pytorch/pytorch/pull/35032
"""

import torch
import torch.nn as nn
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


def make_data(n=2048, d=16):
    x = torch.randn(n, d) * torch.linspace(0.5, 3.0, d)
    w = torch.randn(d)
    logits = x @ w / d + 0.8 * torch.sin(x[:, 0]) - 0.5 * x[:, 1] * x[:, 2] / 3
    y = (logits > logits.median()).long()
    return x, y


def main():
    x, y = make_data()
    train = TensorDataset(x[:1600], y[:1600])
    xte, yte = x[1600:], y[1600:]
    loader = DataLoader(train, batch_size=64, shuffle=True)
    model = nn.Sequential(
        nn.Linear(16, 64),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.Linear(64, 64),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.Linear(64, 2),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    epochs, swa_start = 12, 7
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=swa_start + 2)
    swa_model = AveragedModel(model)
    swa_sched = SWALR(opt, swa_lr=0.03, anneal_epochs=2)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        tot = 0.0
        for xb, yb in loader:
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(xb)
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_sched.step()
        else:
            sched.step()
        model.eval()
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        print(f"epoch {epoch:2d} loss {tot / len(train):.4f} lr {opt.param_groups[0]['lr']:.4f} test_acc {acc:.3f}")
    update_bn(loader, swa_model)
    swa_model.eval()
    with torch.no_grad():
        acc = (swa_model(xte).argmax(1) == yte).float().mean().item()
    print(f"SWA model test_acc {acc:.3f} (averaged {int(swa_model.n_averaged)} snapshots)")


if __name__ == "__main__":
    main()
