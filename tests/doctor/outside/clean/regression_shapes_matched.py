"""A regression MLP whose target is unsqueezed to (N, 1) to match the prediction.

Source: https://github.com/deepset-ai/FARM/issues/229
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(32, 5)
y = (X @ torch.arange(5.0)).unsqueeze(1)
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
