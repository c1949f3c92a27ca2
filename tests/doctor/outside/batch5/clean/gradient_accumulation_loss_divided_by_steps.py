"""Gradient accumulation over 4 micro-batches: each micro-batch loss is divided by the number of accumulation
steps, ``zero_grad`` runs only after the optimizer step, and the optimizer steps once every 4 backward calls.
Gradients that persist across several backward calls are intended here.

Source: https://huggingface.co/docs/transformers/main/en/perf_train_gpu_one#gradient-accumulation
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
accum = 4
X, y = torch.randn(256, 20), torch.randint(0, 5, (256,))
opt.zero_grad()
for i, start in enumerate(range(0, 256, 16)):
    loss = F.cross_entropy(model(X[start : start + 16]), y[start : start + 16]) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
