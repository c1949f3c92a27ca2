"""Gradient clipping is applied right after ``scaler.scale(loss).backward()``, before ``scaler.unscale_``. The
clip sees gradients multiplied by the loss scale (65536), so it always clips them to max_norm; scaler.step then
divides by the scale again, leaving gradients ~65536 times too small. Training crawls and nothing complains.

Source: https://github.com/milesial/Pytorch-UNet/issues/468
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 3, padding=1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scaler = torch.amp.GradScaler("cpu")
X = torch.randn(64, 1, 16, 16)
Y = (X > 0).long().squeeze(1)
for i in range(0, 64, 16):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        logits = model(X[i : i + 16])
    loss = F.cross_entropy(logits.float(), Y[i : i + 16])
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # BUG-LINE
    scaler.step(opt)
    scaler.update()
