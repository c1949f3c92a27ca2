"""Per-feature scales as a list of nn.Parameter: not registered, not in model.parameters(), never updated.

Source: https://runebook.dev/zh/docs/pytorch/generated/torch.nn.modulelist/torch.nn.ModuleList
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [nn.Parameter(torch.ones(8)) for _ in range(2)]  # BUG-LINE
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        for s in self.scales:
            x = x * s
        return self.fc(x)


model = Scaled()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(32, 8)
y = X.sum(1, keepdim=True)
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
