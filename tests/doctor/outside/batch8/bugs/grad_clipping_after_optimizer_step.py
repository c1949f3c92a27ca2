"""Gradient clipping is applied after optimizer.step(), so it has no effect.

clip_grad_norm_ rescales the .grad tensors, but the update has already been
applied with the unclipped gradients; the clipped gradients are then wiped by
the next zero_grad().  Exploding gradients are therefore never limited.
Source: https://github.com/awslabs/graphstorm/issues/1366
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 16) * 5
y = torch.randn(64, 1) * 50

for _step in range(8):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # BUG-LINE
print(f"loss {loss.item():.2f} grad_norm {norm.item():.2f}")
