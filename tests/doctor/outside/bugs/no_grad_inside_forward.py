"""The encoder runs under torch.no_grad() inside forward (meant for a frozen pass that is not frozen in the optimizer):
it never learns.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        with torch.no_grad():  # BUG-LINE
            h = self.encoder(x)
        return self.head(h)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(64, 20), torch.randint(0, 5, (64,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
