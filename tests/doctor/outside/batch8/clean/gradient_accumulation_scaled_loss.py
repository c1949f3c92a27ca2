"""Gradient accumulation with the micro-batch loss divided by the number of micro-steps.

Each of the ACCUM micro-batch losses is scaled by 1/ACCUM before backward, so
the summed gradient equals the gradient of the mean loss over the large batch;
zero_grad() and step() happen only once per ACCUM micro-batches.
Source: https://github.com/karpathy/nanoGPT/issues/605
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
ACCUM = 4
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(96, 12)
y = x[:, :3].sum(1, keepdim=True)

for step in range(6):
    opt.zero_grad(set_to_none=True)
    for micro in range(ACCUM):
        i = (step * ACCUM + micro) * 4 % 96
        loss = nn.functional.mse_loss(model(x[i : i + 4]), y[i : i + 4])
        (loss / ACCUM).backward()
    opt.step()
print(f"last micro loss {loss.item():.4f}")
