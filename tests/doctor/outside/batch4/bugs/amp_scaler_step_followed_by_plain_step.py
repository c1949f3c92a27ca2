"""A mixed-precision loop calls ``scaler.step(optimizer)`` and then also ``optimizer.step()`` (left over from
the fp32 version). Each batch therefore updates the weights twice with the same gradients (and advances the
Adam moments twice), doubling the effective step and corrupting the optimizer state; no error or warning.

Source: https://github.com/IAHispano/Applio/pull/860
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")
X, y = torch.randn(160, 16), torch.randint(0, 4, (160,))
for i in range(0, 160, 32):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.cross_entropy(model(X[i : i + 32]).float(), y[i : i + 32])
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.step()  # BUG-LINE
