"""To save memory the first block is wrapped in reentrant ``torch.utils.checkpoint`` and called on the raw input
batch, which does not require grad. The reentrant checkpoint output then does not require grad either, so the
checkpointed blocks never receive a gradient (only a warning is printed) and only the head trains.

Source: https://github.com/pytorch/pytorch/issues/7617
"""

import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.block2 = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 5)

    def forward(self, x):
        h = checkpoint(self.block1, x, use_reentrant=True)  # BUG-LINE
        h = checkpoint(self.block2, h, use_reentrant=True)
        return self.head(h)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(128, 20), torch.randint(0, 5, (128,))
for i in range(0, 128, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
