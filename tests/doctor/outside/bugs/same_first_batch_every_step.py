"""next(iter(loader)) inside the loop with shuffle off: every step trains on the same first batch.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(128, 8), torch.randint(0, 2, (128,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(3):
    xb, yb = next(iter(loader))  # BUG-LINE
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
