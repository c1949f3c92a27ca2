"""Manual gradient accumulation whose last window per epoch is shorter than accum_steps.

Each epoch has 10 micro-batches and accum_steps=4, so the windows are 4, 4 and 2
micro-batches. The loss of every micro-batch is divided by the constant
accum_steps, so the final (2 micro-batch) window produces a gradient that is
half as large as it should be, i.e. the last optimizer step of every epoch is
silently down-weighted (and with clipping/SGD its update is halved). The fix
is to divide by the real number of micro-batches (or samples) in the window.

Source: https://github.com/huggingface/transformers/pull/38872
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(320, 16)
w_true = torch.randn(16, 1)
y = X @ w_true + 0.1 * torch.randn(320, 1)

model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
micro_bs = 32
accum_steps = 4
n_micro = X.shape[0] // micro_bs

for epoch in range(12):
    perm = torch.randperm(X.shape[0])
    opt.zero_grad()
    for i in range(n_micro):
        idx = perm[i * micro_bs : (i + 1) * micro_bs]
        loss = F.mse_loss(model(X[idx]), y[idx])
        (loss / accum_steps).backward()  # BUG-LINE
        if (i + 1) % accum_steps == 0 or (i + 1) == n_micro:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
    with torch.no_grad():
        full = F.mse_loss(model(X), y).item()
    print(f"epoch {epoch:2d} train mse {full:.4f}")
