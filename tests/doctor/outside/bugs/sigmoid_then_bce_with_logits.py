"""The output goes through sigmoid, then into binary_cross_entropy_with_logits which applies it again.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(40, 6)
y = (X[:, :1] > 0).float()
for _step in range(3):
    opt.zero_grad()
    p = torch.sigmoid(model(X))  # BUG-LINE
    loss = F.binary_cross_entropy_with_logits(p, y)
    loss.backward()
    opt.step()
