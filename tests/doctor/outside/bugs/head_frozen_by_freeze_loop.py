"""Everything is frozen after the new head was attached; the head (meant to train) is frozen too and only a bias trains.

Source: https://github.com/unslothai/unsloth/issues/3327
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(12, 24), nn.ReLU())
        self.head = nn.Linear(24, 3)
        self.adapter = nn.Parameter(torch.zeros(24))

    def forward(self, x):
        return self.head(self.backbone(x) + self.adapter)


model = Model()
for p in list(model.backbone.parameters()) + list(model.head.parameters()):  # BUG-LINE
    p.requires_grad = False
opt = torch.optim.Adam([model.adapter, *model.head.parameters()], lr=1e-2)
X, y = torch.randn(32, 12), torch.randint(0, 3, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
