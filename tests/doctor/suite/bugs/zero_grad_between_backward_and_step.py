"""MLP regression where zero_grad sits between backward and step: every step sees zero gradients.

doctor-expect: zero_grad_before_step
"""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(512, 6)
y = torch.sin(X.sum(1, keepdim=True))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    loss = nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    opt.zero_grad()  # bug: clears what backward just computed
    opt.step()
