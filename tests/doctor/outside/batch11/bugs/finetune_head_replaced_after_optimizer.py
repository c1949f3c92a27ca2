"""Fine-tune a small "pretrained" CNN (pretrained here for a few steps on a 10-way synthetic task) on a
new 3-way task by replacing its classification head. The optimiser is constructed before the head
is swapped, so it holds the parameters of the discarded 10-way head; the new head's parameters are
never updated and keep their random initialisation, while the backbone adapts to a fixed random
projection. backward() fills the new head's .grad, but no optimiser steps it; no error or warning.

Source: https://github.com/microsoft/nni/issues/4521
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def make_task(n, k):
    y = torch.randint(0, k, (n,))
    x = torch.randn(n, 1, 12, 12) * 0.5
    x[torch.arange(n), 0, y % 12, :] += 2.0
    x[torch.arange(n), 0, :, (y * 5) % 12] += 1.0
    return x, y


class Net(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.fc = nn.Linear(256, k)

    def forward(self, x):
        return self.fc(self.backbone(x))


model = Net(10)
pre_opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for _ in range(20):
    x, y = make_task(64, 10)
    loss = F.cross_entropy(model(x), y)
    pre_opt.zero_grad()
    loss.backward()
    pre_opt.step()

opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # BUG-LINE
model.fc = nn.Linear(256, 3)
head_init = model.fc.weight.detach().clone()
for step in range(60):
    x, y = make_task(64, 3)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
x, y = make_task(512, 3)
with torch.no_grad():
    acc = (model(x).argmax(1) == y).float().mean().item()
print(
    "final loss",
    round(loss.item(), 4),
    "accuracy",
    round(acc, 3),
    "head moved",
    round((model.fc.weight - head_init).abs().sum().item(), 5),
)
