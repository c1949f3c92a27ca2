"""step() comes before backward(): each step applies the previous batch's gradient; the first step applies none.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(48, 8), torch.randint(0, 2, (48,))
for step in range(3):
    xb, yb = X[step * 16 : (step + 1) * 16], y[step * 16 : (step + 1) * 16]
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    opt.step()  # BUG-LINE
    loss.backward()
