"""Logistic regression with zero-initialised weights: the first logits are all 0, inside [0, 1], and correct.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Linear(5, 1)
nn.init.zeros_(model.weight)
nn.init.zeros_(model.bias)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
X = torch.randn(64, 5)
y = (X[:, :1] > 0).float()
for _step in range(3):
    opt.zero_grad()
    loss = F.binary_cross_entropy_with_logits(model(X), y)
    loss.backward()
    opt.step()
