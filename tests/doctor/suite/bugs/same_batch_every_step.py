"""MLP classifier; the batch is taken once with next(iter(loader)) before the loop and reused.

doctor-expect: same_batch
"""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(2048, 10), torch.randint(0, 5, (2048,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 5))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
xb, yb = next(iter(loader))
for _step in range(30):
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
