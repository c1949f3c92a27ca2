"""Per-task heads in a ModuleDict and per-feature scales in a ParameterList: all registered.

Source: https://runebook.dev/zh/docs/pytorch/generated/torch.nn.modulelist/torch.nn.ModuleList
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(8)) for _ in range(2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})

    def forward(self, x):
        for s in self.scales:
            x = x * s
        return self.heads["a"](x), self.heads["b"](x)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
X, ya, yb = torch.randn(32, 8), torch.randint(0, 2, (32,)), torch.randint(0, 3, (32,))
for _step in range(3):
    opt.zero_grad()
    a, b = model(X)
    loss = F.cross_entropy(a, ya) + F.cross_entropy(b, yb)
    loss.backward()
    opt.step()
