"""Gradient accumulation over 4 micro-batches (each loss divided by 4), with the gradient norm clipped once,
after the last backward and before the step, then zeroed. Correct: the clip acts on the gradients the step uses.

Source: https://github.com/huggingface/transformers/issues/1563
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.randn(512, 10), torch.randn(512, 1) * 5), batch_size=16, shuffle=True
)
accum = 4
for i, (xb, yb) in enumerate(loader):
    loss = F.mse_loss(model(xb), yb) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
