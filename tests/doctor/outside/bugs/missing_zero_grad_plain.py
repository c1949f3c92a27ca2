"""The loop never zeroes gradients: each step uses the sum of all past gradients.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
for step in range(3):
    xb, yb = X[step * 16 : (step + 1) * 16], y[step * 16 : (step + 1) * 16]
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()  # BUG-LINE
    opt.step()
