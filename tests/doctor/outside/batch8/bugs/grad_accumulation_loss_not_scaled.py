"""Gradient accumulation without dividing each micro-batch loss by the number of steps.

Each micro-batch loss is a mean, and the gradients of ACCUM micro-batches are
summed before optimizer.step().  Without loss / ACCUM the effective gradient
(and learning rate) is ACCUM times larger than with the equivalent big batch.
Source: https://github.com/ApolloResearch/e2e_sae/pull/70
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
ACCUM = 4
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(128, 12)
y = x[:, :3].sum(1, keepdim=True)

step = 0
opt.zero_grad()
for i in range(0, 128, 4):
    loss = nn.functional.mse_loss(model(x[i : i + 4]), y[i : i + 4])
    loss.backward()  # BUG-LINE
    if (i // 4 + 1) % ACCUM == 0:
        opt.step()
        opt.zero_grad()
        step += 1
    if step == 6:
        break
print(f"optimizer steps {step} last loss {loss.item():.4f}")
