"""A binarising layer with a straight-through estimator written as torch.autograd.Function.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.sign(x)

    @staticmethod
    def backward(ctx, g):
        return g


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(10, 16), nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(SignSTE.apply(self.fc1(x)))


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(32, 10), torch.randint(0, 2, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
