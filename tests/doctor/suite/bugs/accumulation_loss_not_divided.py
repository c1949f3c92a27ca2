"""Gradient accumulation over 4 micro-batches with SGD, the loss not divided by 4: every step uses the sum of
four mean gradients, an lr four times the one configured.

doctor-expect: accumulation_not_scaled
"""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(1024, 12)
y = X[:, :3].argmax(dim=1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
accum = 4
for i, (xb, yb) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()  # bug: (loss / accum).backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad(set_to_none=True)
