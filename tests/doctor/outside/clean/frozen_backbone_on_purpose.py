"""Linear probing: the backbone is frozen and left out of the optimizer; only the head trains.

Source: https://github.com/huggingface/peft/issues/1894
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
for p in backbone.parameters():
    p.requires_grad_(False)
head = nn.Linear(32, 3)
opt = torch.optim.Adam(head.parameters(), lr=1e-3)
X, y = torch.randn(32, 12), torch.randint(0, 3, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(head(backbone(X)), y)
    loss.backward()
    opt.step()
