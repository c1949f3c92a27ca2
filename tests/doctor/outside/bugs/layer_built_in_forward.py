"""The projection is built inside forward: each call makes new random weights that no optimizer holds.

Source: https://thecodeforge.io/ml-ai/pytorch-neural-network/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 24)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        proj = nn.Linear(24, 2)  # BUG-LINE
        return proj(h)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(40, 12), torch.randint(0, 2, (40,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
