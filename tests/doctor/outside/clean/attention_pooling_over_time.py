"""Attention pooling with softmax over dim 1 (time), as meant.

Source: https://openillumi.com/en/en-pytorch-softmax-dim-multidim-tensor-resolve
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.score, self.cls = nn.Linear(8, 1), nn.Linear(8, 2)

    def forward(self, x):
        w = torch.softmax(self.score(x), dim=1)
        return self.cls((w * x).sum(1))


model = Pool()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(16, 7, 8), torch.randint(0, 2, (16,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
