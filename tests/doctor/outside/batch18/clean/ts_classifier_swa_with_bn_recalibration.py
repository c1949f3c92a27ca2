"""Sensor time-series classifier trained with stochastic weight averaging and a BN recalibration pass.

Unusual but correct: the run keeps an AveragedModel of the 1D CNN from epoch 4
onwards and switches the optimizer to a constant SWALR learning rate for the SWA
phase.  The averaged weights were never used in a forward pass during training,
so the BatchNorm running statistics that the averaged network carries do not
belong to it; after training the script runs torch.optim.swa_utils.update_bn on
the *averaged* model (not the online one) to recompute its running_mean /
running_var from the training data before evaluating it.

Source: https://github.com/timgaripov/swa/issues/8
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

N_CH, T, N_CLASSES = 3, 64, 3
PLAN = {"epochs": 8, "swa_start": 4, "lr": 0.05, "swa_lr": 0.02, "batch": 64}


def make_dataset(n):
    """Vibration windows: the fault class sets the vibration amplitude on top of a DC offset."""
    y = torch.randint(0, N_CLASSES, (n,))
    t = torch.linspace(0, 1, T)
    amp = (0.5 + 0.6 * y).float().view(-1, 1, 1)
    sig = amp * torch.sin(2 * torch.pi * 6 * t.view(1, 1, -1) + torch.rand(n, N_CH, 1) * 6.28)
    x = 4.0 + sig + 0.3 * torch.randn(n, N_CH, T)
    return x, y


class ConvNet1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(N_CH, 16, 5, padding=2),
            nn.BatchNorm1d(16),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(16, 32, 5, padding=2),
            nn.BatchNorm1d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.fc = nn.Linear(32, N_CLASSES)

    def forward(self, x):
        return self.fc(self.body(x).flatten(1))


@torch.no_grad()
def evaluate(net, x, y):
    net.eval()
    acc = (net(x).argmax(-1) == y).float().mean().item()
    net.train()
    return acc


def main():
    xtr, ytr = make_dataset(1024)
    xte, yte = make_dataset(512)
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=PLAN["batch"], shuffle=True)
    model = ConvNet1d()
    opt = torch.optim.SGD(model.parameters(), lr=PLAN["lr"], momentum=0.9, weight_decay=1e-4)
    swa_model = AveragedModel(model)
    swa_sched = SWALR(opt, swa_lr=PLAN["swa_lr"], anneal_epochs=1)
    for epoch in range(PLAN["epochs"]):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch >= PLAN["swa_start"]:
            swa_model.update_parameters(model)
            swa_sched.step()
        print(f"epoch {epoch} loss {loss.item():.4f} online test acc {evaluate(model, xte, yte):.3f}")
    update_bn(loader, swa_model)
    print(f"final online acc {evaluate(model, xte, yte):.3f}  SWA acc {evaluate(swa_model, xte, yte):.3f}")
    with torch.no_grad():
        swa_model.eval()
        print(f"SWA test loss {F.cross_entropy(swa_model(xte), yte).item():.4f}")


if __name__ == "__main__":
    main()
