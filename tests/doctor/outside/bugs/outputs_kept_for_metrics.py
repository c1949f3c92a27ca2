"""Each step's logits are appended to a list for an epoch metric without detach: every step's graph stays alive.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(96, 12), torch.randint(0, 3, (96,))
seen = []
for step in range(4):
    xb, yb = X[step * 24 : (step + 1) * 24], y[step * 24 : (step + 1) * 24]
    opt.zero_grad()
    logits = model(xb)
    seen.append(logits)  # BUG-LINE
    loss = F.cross_entropy(logits, yb)
    loss.backward()
    opt.step()
print(torch.cat(seen).argmax(1).float().mean())
