"""Backbone + a head added after the optimizer was built: the head gets gradients but never changes.

doctor-expect: param_not_in_optimizer
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
model.append(nn.Linear(64, 4))  # bug: added after the optimizer took model.parameters()
X, y = torch.randn(512, 20), torch.randint(0, 4, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
for xb, yb in loader:
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
