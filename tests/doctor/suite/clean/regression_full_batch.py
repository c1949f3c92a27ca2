"""Clean: full-batch regression MLP (the whole data set every step, no DataLoader), LBFGS-free plain Adam."""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.linspace(-3, 3, 200).unsqueeze(1)
y = torch.sin(X) + 0.05 * torch.randn_like(X)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _step in range(50):
    loss = nn.functional.mse_loss(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
