"""Validation runs in eval() but with grad enabled, and the outputs are kept: the graph lives on.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y, Xv = torch.randn(32, 8), torch.randint(0, 2, (32,)), torch.randn(64, 8)
val_logits = []
for _step in range(3):
    model.train()
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
    model.eval()
    val_logits.append(model(Xv))  # BUG-LINE
