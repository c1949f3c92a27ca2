"""A model cast to float16 with ``.half()`` and trained by Adam with its default ``eps=1e-8``: eps rounds to 0
in float16 and small squared gradients underflow to 0, so Adam divides by zero and the first step writes
inf/NaN into the weights.

Source: https://discuss.pytorch.org/t/adam-half-precision-nans/1765
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).half()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # BUG-LINE
X = torch.randn(256, 32).half()
y = (0.01 * torch.randn(256, 1)).half()
for start in range(0, 256, 32):
    loss = F.mse_loss(model(X[start : start + 32]), y[start : start + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
