"""torch.utils.checkpoint on the middle block: its forward runs under no_grad and is recomputed in backward.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(10, 32)
        self.mid = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))
        self.b = nn.Linear(32, 2)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = checkpoint(self.mid, h, use_reentrant=False)
        return self.b(h)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(32, 10), torch.randint(0, 2, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
