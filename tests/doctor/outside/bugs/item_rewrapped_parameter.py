"""A learnable bias is read with .item() and wrapped again: it gets no gradient, never trains.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Calib(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.offset = nn.Parameter(torch.tensor(0.0))

    def forward(self, x):
        return self.fc(x) + torch.tensor(self.offset.item())  # BUG-LINE


model = Calib()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(32, 4)
y = X.sum(1, keepdim=True) + 3.0
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
