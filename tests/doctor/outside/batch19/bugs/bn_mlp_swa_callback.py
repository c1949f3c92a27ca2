"""SWA averaged model is evaluated with stale BatchNorm statistics.

A small Composer-style SWA callback averages the weights of a BatchNorm MLP from
``swa_start`` onwards and is supposed to recompute the BatchNorm running
statistics of the averaged model (``update_bn``) when SWA ends.  The end check
compares the 0-based epoch index with the number of epochs, so it is never true
inside the training loop: the BN recompute silently never happens.  The
averaged model keeps the running_mean / running_var that were deep-copied when
it was created (the untrained initial buffers), and its evaluation accuracy is
far below that of the live model, while training itself looks perfectly fine.

Source: https://github.com/mosaicml/composer/issues/624
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

HP = dict(epochs=8, swa_start=3, lr=0.05, swa_lr=0.4, batch_size=128)


W_TRUE = torch.randn(16, 4)


def make_data(n):
    x = torch.randn(n, 16) * 10.0 + 20.0
    y = ((x - 20.0) @ W_TRUE).argmax(-1)
    return x, y


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(16, 64),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            nn.Linear(64, 4),
        )

    def forward(self, x):
        return self.net(x)


class SWACallback:
    def __init__(self, model, optimizer, loader, hp):
        self.hp = hp
        self.loader = loader
        self.swa_model = AveragedModel(model)
        self.swa_sched = SWALR(optimizer, swa_lr=hp["swa_lr"], anneal_epochs=1)

    def on_epoch_end(self, epoch, model):
        if epoch >= self.hp["swa_start"]:
            self.swa_model.update_parameters(model)
            self.swa_sched.step()
        if epoch == self.hp["epochs"]:  # BUG-LINE
            update_bn(self.loader, self.swa_model)


@torch.no_grad()
def accuracy(model, x, y):
    model.eval()
    acc = (model(x).argmax(-1) == y).float().mean().item()
    model.train()
    return acc


def main():
    xtr, ytr = make_data(1024)
    xte, yte = make_data(512)
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=HP["batch_size"], shuffle=True)
    model = BNNet()
    opt = torch.optim.SGD(model.parameters(), lr=HP["lr"], momentum=0.9)
    cb = SWACallback(model, opt, [xb for xb, _ in loader], HP)
    for epoch in range(HP["epochs"]):
        tot = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            tot += loss.item() * xb.shape[0]
        cb.on_epoch_end(epoch, model)
        print(f"epoch {epoch:2d} loss {tot / len(xtr):.4f}")
    print(f"live model test acc {accuracy(model, xte, yte):.3f}")
    print(f"swa model  test acc {accuracy(cb.swa_model, xte, yte):.3f}")


if __name__ == "__main__":
    main()
