"""Manual gradient accumulation with an uneven final window and a short last batch.

Unusual on purpose: the dataset size is not a multiple of the micro-batch size
and the number of micro-batches is not a multiple of accum_steps, so the last
window of each epoch has fewer micro-batches (and its last micro-batch fewer
samples). Each micro-batch loss is computed with reduction='sum' and divided by
the number of SAMPLES in its whole window, computed ahead of time, so every
optimizer step uses the exact mean gradient over its window; gradients are
clipped only once the window is complete.

Source: https://github.com/Adit-Jain-srm/NightmareNet/pull/562
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(310, 16)
w_true = torch.randn(16, 1)
y = X @ w_true + 0.1 * torch.randn(310, 1)

model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
micro_bs, accum_steps = 32, 4

for epoch in range(12):
    perm = torch.randperm(X.shape[0])
    micro = [perm[i : i + micro_bs] for i in range(0, X.shape[0], micro_bs)]
    windows = [micro[i : i + accum_steps] for i in range(0, len(micro), accum_steps)]
    for window in windows:
        n_window = sum(len(m) for m in window)
        opt.zero_grad()
        for idx in window:
            loss = F.mse_loss(model(X[idx]), y[idx], reduction="sum") / n_window
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    with torch.no_grad():
        full = F.mse_loss(model(X), y).item()
    print(f"epoch {epoch:2d} windows {[sum(len(m) for m in w) for w in windows]} train mse {full:.4f}")
