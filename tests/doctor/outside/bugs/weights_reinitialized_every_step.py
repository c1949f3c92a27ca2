"""An init function is applied inside the training loop: every step starts again from fresh random weights.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def init(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(48, 8), torch.randint(0, 2, (48,))
for step in range(4):
    model.apply(init)  # BUG-LINE
    opt.zero_grad()
    loss = F.cross_entropy(model(X[step * 12 : (step + 1) * 12]), y[step * 12 : (step + 1) * 12])
    loss.backward()
    opt.step()
