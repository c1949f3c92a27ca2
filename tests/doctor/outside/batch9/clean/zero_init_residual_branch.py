"""Residual network whose last BatchNorm in each block is initialised with gamma = 0.

Unusual: every residual branch outputs exactly zero at initialisation, so at the first step
the branch's inner conv weights receive zero gradient and only the BN gamma moves; the blocks
start as identities and "switch on" during training.
Source: https://github.com/facebookresearch/simsiam/issues/28
"""

import torch


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)
        torch.nn.init.zeros_(self.bn2.weight)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(h)))


torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1),
    Block(8),
    Block(8),
    torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(),
    torch.nn.Linear(8, 5),
)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for _step in range(8):
    x = torch.randn(8, 3, 12, 12)
    y = torch.randint(0, 5, (8,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
