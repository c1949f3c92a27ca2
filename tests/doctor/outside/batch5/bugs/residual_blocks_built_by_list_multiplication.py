"""A deep residual network builds its body as ``nn.Sequential(*(n_blocks * [ResBlock(c)]))``: list
multiplication repeats one module object, so all ten blocks are the same block with one set of weights,
applied ten times. The network trains, but with a tenth of the intended capacity.

Source: https://github.com/deep-learning-with-pytorch/dlwpt-code/issues/89
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return x + torch.relu(self.bn(self.conv(x)))


class NetResDeep(nn.Module):
    def __init__(self, c=8, n_blocks=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, c, 3, padding=1)
        self.resblocks = nn.Sequential(*(n_blocks * [ResBlock(c)]))  # BUG-LINE
        self.fc = nn.Linear(c * 4 * 4, 2)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(self.resblocks(x), 2)
        return self.fc(x.flatten(1))


model = NetResDeep()
opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
x, y = torch.randn(64, 3, 16, 16), torch.randint(0, 2, (64,))
for i in range(0, 64, 16):
    loss = F.cross_entropy(model(x[i : i + 16]), y[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()
