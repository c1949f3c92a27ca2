"""Gradient accumulation over 4 micro-batches is set up (loss divided by 4, step every 4th micro-batch), but
``optimizer.zero_grad()`` sits inside the micro-batch loop. Each backward wipes the previous micro-batches'
gradients, so every step uses only the last micro-batch, scaled down by 4: a quarter of the data and a
quarter of the intended step size, silently.

Source: https://github.com/bytetriper/RAE/issues/67
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
ACCUM = 4
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
micro = 0
for i in range(0, 256, 16):
    opt.zero_grad()  # BUG-LINE
    loss = F.cross_entropy(model(X[i : i + 16]), y[i : i + 16]) / ACCUM
    loss.backward()
    micro += 1  # noqa: SIM113 - the counter as the report wrote it
    if micro % ACCUM == 0:
        opt.step()
