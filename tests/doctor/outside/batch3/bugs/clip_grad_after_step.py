"""Gradient clipping written after ``optimizer.step()``: the clip rescales gradients that were already applied and
are zeroed before the next backward, so the update is never clipped. With a large learning rate and a loss with
rare huge residuals the unclipped steps jump around; nothing raises.

Source: https://github.com/jongwook/onsets-and-frames/issues/24
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(320, 6)
y = X.sum(1, keepdim=True) + torch.where(torch.rand(320, 1) < 0.05, 40.0, 0.0)  # rare outliers: big gradients
for _epoch in range(2):
    for i in range(0, 320, 32):
        loss = F.mse_loss(model(X[i : i + 32]), y[i : i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # BUG-LINE
