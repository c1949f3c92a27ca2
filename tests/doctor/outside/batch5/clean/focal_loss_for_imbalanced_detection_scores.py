"""Focal loss on an imbalanced binary problem: the per-example BCE is down-weighted by ``(1 - p_t) ** gamma`` and
class-balanced by alpha, and the classifier bias is initialised to a low prior probability. The unusual loss
shape and the bias prior are both part of the method.

Source: https://arxiv.org/abs/1708.02002
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 1))
nn.init.constant_(model[2].bias, -math.log((1 - 0.01) / 0.01))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def focal_loss(logits, target, alpha=0.25, gamma=2.0):
    ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    p = torch.sigmoid(logits)
    p_t = p * target + (1 - p) * (1 - target)
    a_t = alpha * target + (1 - alpha) * (1 - target)
    return (a_t * (1 - p_t) ** gamma * ce).sum() / target.sum().clamp(min=1)


for _step in range(6):
    x = torch.randn(128, 12)
    y = ((x[:, 0] + x[:, 1]) > 2.0).float().unsqueeze(1)
    loss = focal_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
