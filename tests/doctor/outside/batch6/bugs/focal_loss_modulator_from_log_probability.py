"""A multi-class focal loss computes ``pt = one_hot * log_softmax(logits)`` and then weights by
``(1 - pt) ** gamma``: pt is a log-probability (<= 0), so the "modulating factor" is >= 1 and grows for the
confident examples instead of shrinking, the opposite of focal loss. Training runs normally.

Source: https://github.com/HeyLynne/FocalLoss_for_multiclass/issues/3
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(256, 12)
y = torch.randint(0, 4, (256,))
gamma = 2.0
for i in range(0, 256, 32):
    log_p = F.log_softmax(model(X[i : i + 32]), dim=1)
    onehot = F.one_hot(y[i : i + 32], 4).float()
    pt = (onehot * log_p).sum(1)  # BUG-LINE
    logpt = (onehot * log_p).sum(1)
    loss = (-((1 - pt) ** gamma) * logpt).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
