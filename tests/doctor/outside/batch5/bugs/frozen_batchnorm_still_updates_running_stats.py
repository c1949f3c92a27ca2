"""A pretrained feature extractor is frozen with ``requires_grad = False`` on all its parameters, but the model
stays in train mode. Its BatchNorm layers keep overwriting running_mean / running_var with the statistics of
each small fine-tuning batch, so the "frozen" extractor drifts from its pretrained behaviour.

Source: https://github.com/pytorch/pytorch/issues/9046
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.BatchNorm2d(32),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
)
for m in backbone.modules():  # pretend these came from a checkpoint
    if isinstance(m, nn.BatchNorm2d):
        m.running_mean.fill_(0.3)
        m.running_var.fill_(2.0)
for p in backbone.parameters():
    p.requires_grad = False
head = nn.Linear(32, 5)
model = nn.Sequential(backbone, head)
model.train()  # BUG-LINE
opt = torch.optim.SGD(head.parameters(), lr=0.05)
for _step in range(5):
    x, y = torch.randn(4, 3, 16, 16) * 3 + 1, torch.randint(0, 5, (4,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
