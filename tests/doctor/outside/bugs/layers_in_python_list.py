"""An MLP keeps its hidden layers in a plain list: model.parameters() misses them, the optimizer never updates them.

Source: https://runebook.dev/zh/docs/pytorch/generated/torch.nn.modulelist/torch.nn.ModuleList
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = [nn.Linear(16, 32), nn.Linear(32, 32)]  # BUG-LINE
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
