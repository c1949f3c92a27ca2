"""Parameters updated by hand under no_grad; gradients zeroed by hand.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Linear(6, 1)
X = torch.randn(32, 6)
y = X.sum(1, keepdim=True)
for _step in range(3):
    loss = F.mse_loss(model(X), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.05 * p.grad
            p.grad = None
