"""Features go through NumPy for a clip and back: autograd does not follow, the feature layer never learns.

Source: https://arxiv.org/abs/1910.11015
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Linear(10, 10)
        self.cls = nn.Linear(10, 3)

    def forward(self, x):
        f = self.features(x)
        f = torch.from_numpy(np.clip(f.detach().numpy(), -1, 1))  # BUG-LINE
        return self.cls(f)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(30, 10), torch.randint(0, 3, (30,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
