"""Supervised CNN-ish classifier with an EMA copy of the weights used for evaluation.

The EMA update walks only model.parameters(). The EMA model contains
BatchNorm layers whose running_mean / running_var are buffers, not
parameters, so they keep the values they had when the EMA copy was made
(zeros / ones from initialisation) for the whole run. The inputs here have a
large offset and scale, so the EMA model normalises with the wrong statistics
in eval mode and its accuracy is far below the online model's, even though
its weights are a perfectly good average. No error is raised.

Source: https://github.com/FlyreelAI/sesemi/issues/36
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def make_model():
    return nn.Sequential(
        nn.Conv1d(1, 16, 5, padding=2),
        nn.BatchNorm1d(16),
        nn.ReLU(),
        nn.Conv1d(16, 16, 5, padding=2),
        nn.BatchNorm1d(16),
        nn.ReLU(),
        nn.AdaptiveAvgPool1d(1),
        nn.Flatten(),
        nn.Linear(16, 3),
    )


def make_data(n, length=64):
    y = torch.randint(0, 3, (n,))
    t = torch.linspace(0, 6.28, length)
    freq = (y + 1).float()[:, None]
    x = torch.sin(freq * t) + 0.4 * torch.randn(n, length)
    return (5.0 + 3.0 * x).unsqueeze(1), y


x_tr, y_tr = make_data(3000)
x_va, y_va = make_data(600)

model = make_model()
ema = copy.deepcopy(model)
for p in ema.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
DECAY = 0.99


@torch.no_grad()
def ema_update():
    for ema_p, p in zip(ema.parameters(), model.parameters()):  # BUG-LINE
        ema_p.mul_(DECAY).add_(p.detach(), alpha=1 - DECAY)


@torch.no_grad()
def accuracy(net):
    net.eval()
    acc = (net(x_va).argmax(-1) == y_va).float().mean().item()
    return acc


for step in range(300):
    model.train()
    idx = torch.randint(0, x_tr.shape[0], (64,))
    loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema_update()
    if step % 50 == 0 or step == 299:
        print(f"step {step:3d} loss {loss.item():.4f} online_acc {accuracy(model):.3f} ema_acc {accuracy(ema):.3f}")
