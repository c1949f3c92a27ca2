"""A sigmoid focal loss writes the modulating factor of the positive term as ``(1 - p) * gamma`` instead of
``(1 - p) ** gamma``: with gamma=2 the positives are simply weighted by 2(1-p), the easy negatives keep the
proper ``p ** gamma`` factor, and the two terms are on inconsistent scales. It trains without complaint.

Source: https://github.com/fudannlp16/focal-loss/issues/2
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(512, 10)
labels = (X[:, 0] > 1.0).float().unsqueeze(1)
alpha, gamma = 0.25, 2.0
for i in range(0, 512, 64):
    p = torch.sigmoid(model(X[i : i + 64])).clamp(1e-6, 1 - 1e-6)
    t = labels[i : i + 64]
    pos = -t * alpha * ((1 - p) * gamma) * torch.log(p)  # BUG-LINE
    neg = -(1 - t) * (1 - alpha) * (p**gamma) * torch.log(1 - p)
    loss = (pos + neg).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
