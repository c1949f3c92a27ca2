"""Metric learning with a hand-written pairwise distance sqrt(sum((a-b)^2)); the diagonal is 0, and the
gradient of sqrt at 0 is inf * 0 = NaN, so every parameter's gradient is NaN while the loss looks finite.

doctor-expect: nonfinite_gradient
"""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 16), torch.randint(0, 4, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for xb, yb in loader:
    z = net(xb)
    dist = ((z[:, None, :] - z[None, :, :]) ** 2).sum(-1).sqrt()  # (B, B); bug: sqrt(0) on the diagonal
    same = (yb[:, None] == yb[None, :]).float()
    loss = (same * dist + (1 - same) * torch.relu(2.0 - dist)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
