"""Four micro-batches are accumulated per step without dividing each loss by 4: the step is 4x too large.

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
opt.zero_grad()
for i, (xb, yb) in enumerate(loader):
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()  # BUG-LINE
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
    if i >= 12:
        break
