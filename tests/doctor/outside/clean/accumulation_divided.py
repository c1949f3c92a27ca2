"""Four micro-batches per step, each loss divided by 4.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(256, 8), torch.randint(0, 2, (256,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16)
accum = 4
opt.zero_grad()
for i, (xb, yb) in enumerate(loader):
    (F.cross_entropy(model(xb), yb) / accum).backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
    if i >= 12:
        break
