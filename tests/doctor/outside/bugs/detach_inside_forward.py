"""A residual branch is detached in forward: the first block gets no gradient, its weights never move.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = nn.Linear(16, 16)
        self.block2 = nn.Linear(16, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        h = torch.tanh(self.block1(x)).detach()  # BUG-LINE
        h = h + torch.tanh(self.block2(h))
        return self.out(h)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(50, 16)
y = X[:, :1] * 2
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
