"""The epoch's running loss adds the loss tensor, not loss.item(): every step's graph stays alive until the epoch ends.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(96, 12), torch.randint(0, 3, (96,))
running = 0.0
for step in range(4):
    xb, yb = X[step * 24 : (step + 1) * 24], y[step * 24 : (step + 1) * 24]
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
    running = running + loss  # BUG-LINE
print(float(running))
