"""model.eval() was called for a sanity check before training and never undone: BN uses running stats, dropout is off.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))
model.eval()  # BUG-LINE
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(64, 10) * 3 + 1, torch.randint(0, 2, (64,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
