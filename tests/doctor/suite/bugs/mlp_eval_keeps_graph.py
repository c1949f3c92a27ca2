"""Regression MLP with a validation pass every 20 steps; the validation runs without torch.no_grad().

doctor-expect: eval_keeps_graph
"""

import torch
from torch import nn

torch.manual_seed(0)
X, Xv = torch.randn(1024, 8), torch.randn(256, 8)
w = torch.randn(8, 1)
y, yv = X @ w + 0.1 * torch.randn(1024, 1), Xv @ w
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step, (xb, yb) in enumerate(loader):
    if step % 20 == 0:
        model.eval()
        val = nn.functional.mse_loss(model(Xv), yv)  # bug: the graph of this forward is kept
        model.train()
    loss = nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
