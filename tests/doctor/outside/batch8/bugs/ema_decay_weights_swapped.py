"""Exponential moving average with the decay weights swapped.

The EMA should keep `beta` of the old average and mix in `1 - beta` of the new
weights.  Here the roles are reversed, so with beta=0.999 the "averaged" model
is just a copy of the latest weights (plus 0.1% of history): the EMA provides
no smoothing at all.
Source: https://github.com/marin-community/levanter/pull/883
"""

import copy

import torch
import torch.nn as nn

torch.manual_seed(0)
BETA = 0.999
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
ema = copy.deepcopy(model).requires_grad_(False)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 10), torch.randn(64, 1)


@torch.no_grad()
def update_ema():
    for pe, pm in zip(ema.parameters(), model.parameters(), strict=False):
        pe.copy_((1 - BETA) * pe + BETA * pm)  # BUG-LINE


for _step in range(8):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    update_ema()
gap = sum((a - b).abs().sum() for a, b in zip(ema.parameters(), model.parameters(), strict=False))
print(f"loss {loss.item():.4f} ema-model gap {gap.item():.5f}")
