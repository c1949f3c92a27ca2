"""clip_grad_norm_ with max_norm 0.0 (a config default never set) scales every gradient to zero.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
max_norm = 0.0
X, y = torch.randn(40, 8), torch.randint(0, 2, (40,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)  # BUG-LINE
    opt.step()
