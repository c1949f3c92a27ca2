"""Gradient accumulation done right: each micro-batch loss is divided by the number of accumulation steps,
gradients are summed over four backward calls, and zero_grad/step happen only once per accumulation cycle.
Several backward passes between optimizer steps are intentional.

Source: https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
ACCUM = 4
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
opt.zero_grad()
for n, i in enumerate(range(0, 256, 16), start=1):
    loss = F.cross_entropy(model(X[i : i + 16]), y[i : i + 16]) / ACCUM
    loss.backward()
    if n % ACCUM == 0:
        opt.step()
        opt.zero_grad()
