"""A depth map (N, H, W) against a prediction (N, 1, H, W): the loss compares every image with every target row.

Source: https://github.com/jiwei0921/CoNet/issues/3
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
img, depth = torch.randn(4, 3, 8, 8), torch.rand(4, 8, 8)
for _step in range(3):
    opt.zero_grad()
    loss = F.l1_loss(model(img), depth)  # BUG-LINE
    loss.backward()
    opt.step()
