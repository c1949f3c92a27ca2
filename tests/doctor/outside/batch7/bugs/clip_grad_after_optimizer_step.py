"""Gradient clipping is called after optimizer.step(). The optimizer has already
consumed the unclipped gradients, and they are zeroed before the next backward,
so clip_grad_norm_ never affects any update: large gradients (here from a badly
scaled target) go straight into the weights and the configured max norm is a
silent no-op.

Source: https://github.com/taesunwhang/UMS-ResSel/issues/3
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 8)
y = 50.0 * x[:, :1]
for _step in range(6):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # BUG-LINE
print("loss", loss.item())
